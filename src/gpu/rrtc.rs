//! The host side of RRT-Connect resident on the GPU (`kernels/rrtc.cu`,
//! [`crate::planners::device`]): the kernel's parameter block, its buffers, one launch for a
//! batch of problems (the blocks taking their attempts from a queue) and the unpacking of the results.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
};

use super::{backend_err, drv, ensure_dev, DeviceState, MAX_DOF};
use crate::collision::CollisionError;
use crate::planners::device::{DeviceOutcome, DeviceProblem, DeviceRrtcSettings, DeviceStatus};
use crate::planners::rrt_connect::{
    DD_ALPHA, DD_MIN_RADIUS_FACTOR, STEP_FLOOR_FACTOR, STEP_HALVE_AFTER, STUCK_AFTER,
};
use crate::robot::JointSpace;

/// Words of an attempt's result (`GMP_RRTC_RESULT_WORDS`).
const RESULT_WORDS: usize = 10;
/// Words per problem after the launch's counters (`GMP_RRTC_BEST_WORDS`).
const BEST_WORDS: usize = 4;
/// Words between those and the work queue's (`GMP_RRTC_QUEUE_GAP`).
const QUEUE_GAP: usize = 32;
/// The work queue's words (`GMP_RRTC_QUEUE_WORDS`).
const QUEUE_WORDS: usize = 4;
/// Path vertices reserved per main attempt (of every problem) in the launch's path pool. Only
/// attempts that solve their problem write their path, so the pool is full only when those
/// paths average more than this; the launch then fails with an error (RRT-Connect paths on the
/// MBM problems have tens of vertices).
const POOL_PER_PROBLEM: usize = 256;

/// `GmpRrtcParams` of `kernels/rrtc.cu`: the same fields in the same order (pointers as
/// 64-bit words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RrtcParams {
    start: u64,
    goal: u64,
    goal_first: u64,
    lower: u64,
    upper: u64,
    tree_q: u64,
    tree_parent: u64,
    tree_radius: u64,
    tree_fails: u64,
    path: u64,
    result: u64,
    path_used: u64,
    best: u64,
    range: f64,
    resolution: f64,
    dd_radius: f64,
    dd_alpha: f64,
    dd_min_factor: f64,
    step_floor_factor: f64,
    seed: u64,
    time_limit_ns: u64,
    continuous: u32,
    cap: u32,
    max_iterations: u32,
    max_refinements: u32,
    flags: u32,
    stuck_after: u32,
    step_halve_after: u32,
    path_pool: u32,
    attempts: u32,
    problems: u32,
    extra: u32,
    escalate_after: u32,
}

// SAFETY: plain old data, laid out as the kernel's struct (repr(C), no padding between the
// 8-byte and 4-byte groups, size a multiple of 8).
unsafe impl DeviceRepr for RrtcParams {}

/// The device buffers of the planner, grown as needed and kept between calls.
pub(super) struct RrtcBufs {
    ends: CudaSlice<f64>,
    bounds: CudaSlice<f64>,
    tree_q: CudaSlice<f64>,
    tree_parent: CudaSlice<u32>,
    tree_radius: CudaSlice<f64>,
    tree_fails: CudaSlice<u32>,
    path: CudaSlice<f64>,
    result: CudaSlice<u32>,
    scene_of: CudaSlice<u32>,
    goal_first: CudaSlice<u32>,
}

impl RrtcBufs {
    fn new(dev: &DeviceState) -> Result<Self, CollisionError> {
        fn one<T: DeviceRepr>(s: &Arc<CudaStream>) -> Result<CudaSlice<T>, CollisionError> {
            unsafe { s.alloc::<T>(1) }.map_err(drv("device allocation"))
        }
        let s = &dev.stream;
        Ok(Self {
            ends: one(s)?,
            bounds: one(s)?,
            tree_q: one(s)?,
            tree_parent: one(s)?,
            tree_radius: one(s)?,
            tree_fails: one(s)?,
            path: one(s)?,
            result: one(s)?,
            scene_of: one(s)?,
            goal_first: one(s)?,
        })
    }
}

/// Checks the problems against the space: every configuration has the space's joints and is
/// finite and inside the limits, every problem has 1 to `attempts` goals (one attempt at least
/// per goal) and no straight motion is too long for the device.
fn check_problems(
    space: &JointSpace,
    problems: &[DeviceProblem<'_>],
    resolution: f64,
    attempts: u32,
) -> Result<(), CollisionError> {
    for (i, p) in problems.iter().enumerate() {
        if p.goals.is_empty() || p.goals.len() > attempts as usize {
            return Err(backend_err(format!(
                "device planner: problem {i} has {} goals; 1 to {attempts} (the attempts per \
                 problem) can be planned",
                p.goals.len()
            )));
        }
        let named = |k: usize| {
            if p.goals.len() == 1 {
                "goal".to_string()
            } else {
                format!("goal {k}")
            }
        };
        let ends = std::iter::once(("start".to_string(), p.start))
            .chain(p.goals.iter().enumerate().map(|(k, g)| (named(k), *g)));
        for (what, q) in ends {
            if q.len() != space.dof() {
                return Err(CollisionError::WrongDof {
                    expected: space.dof(),
                    got: q.len(),
                });
            }
            space.validate(q).map_err(|e| {
                backend_err(format!("device planner: the {what} of problem {i}: {e}"))
            })?;
        }
        for g in &p.goals {
            crate::planners::device::check_straight(space, p.start, g, resolution)
                .map_err(|e| backend_err(format!("device planner: problem {i}: {e}")))?;
        }
    }
    Ok(())
}

/// Environment variable: `given` launches the problems of a device planner call in the order
/// given instead of [`launch_order`]'s (for side-by-side measurements).
pub const RRTC_ORDER_ENV: &str = "GMP_RRTC_ORDER";

/// The order in which the blocks of a launch take the problems: the longest straight distance
/// from start to goal first (to the nearest goal of a goal set; ties: the order given), unless
/// [`RRTC_ORDER_ENV`] is `given`.
///
/// The blocks of a launch start in their order as multiprocessors free up, and a launch of many
/// problems lasts at least as long as its slowest problem from the moment that problem starts:
/// the problems that need many iterations should start first. Which problems those are is not
/// known before planning; on the MotionBenchMaker problems the start-goal distance is a weak
/// but cheap sign of it (`results/mbm/device_order_H100_2026-11-27/`). A problem's plan does
/// not depend on the order (nor on the other problems of the launch), only the launch's time.
pub fn launch_order(space: &JointSpace, problems: &[DeviceProblem<'_>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..problems.len()).collect();
    if std::env::var(RRTC_ORDER_ENV).is_ok_and(|v| v.trim() == "given") {
        return order;
    }
    let far: Vec<f64> = problems
        .iter()
        .map(|p| {
            p.goals
                .iter()
                .filter(|g| p.start.len() == space.dof() && g.len() == space.dof())
                .map(|g| space.distance(p.start, g))
                .min_by(f64::total_cmp)
                .unwrap_or(0.0)
        })
        .collect();
    order.sort_by(|&a, &b| far[b].total_cmp(&far[a]).then(a.cmp(&b)));
    order
}

/// Plans `problems` in one launch of `func` (`rrtc_plan`, or `rrtc_plan_multi` with
/// `multi`: the scene table and each problem's scene) on `dev`, the blocks taking them in
/// [`launch_order`]; the outcomes are in the order of `problems`.
pub(super) fn plan(
    dev: &mut DeviceState,
    func: &CudaFunction,
    multi: Option<(&super::hub::DeviceScenes, &[u32])>,
    space: &JointSpace,
    problems: &[DeviceProblem<'_>],
    s: &DeviceRrtcSettings,
) -> Result<Vec<DeviceOutcome>, CollisionError> {
    if let Some((_, scene_of)) = multi {
        if scene_of.len() != problems.len() {
            return Err(backend_err("device planner: one scene per problem needed"));
        }
    }
    let order = launch_order(space, problems);
    let ordered: Vec<DeviceProblem<'_>> = order.iter().map(|&i| problems[i].clone()).collect();
    let scenes: Option<Vec<u32>> = multi.map(|(_, so)| order.iter().map(|&i| so[i]).collect());
    let launched = plan_in_order(
        dev,
        func,
        multi.zip(scenes.as_deref()).map(|((t, _), so)| (t, so)),
        space,
        &ordered,
        s,
    )?;
    if launched.len() != order.len() {
        return Err(backend_err(format!(
            "device planner: {} results for {} problems",
            launched.len(),
            order.len()
        )));
    }
    // Back to the order of `problems`.
    let mut placed: Vec<(usize, DeviceOutcome)> = order.into_iter().zip(launched).collect();
    placed.sort_by_key(|&(i, _)| i);
    Ok(placed.into_iter().map(|(_, o)| o).collect())
}

/// [`plan`] with the blocks taking the problems in the order given (`multi`'s scenes already
/// checked to be one per problem).
fn plan_in_order(
    dev: &mut DeviceState,
    func: &CudaFunction,
    multi: Option<(&super::hub::DeviceScenes, &[u32])>,
    space: &JointSpace,
    problems: &[DeviceProblem<'_>],
    s: &DeviceRrtcSettings,
) -> Result<Vec<DeviceOutcome>, CollisionError> {
    s.validate()
        .map_err(|e| backend_err(format!("device planner: {e}")))?;
    let n = problems.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let dof = space.dof();
    // (MAX_DOF is also the width of the kernel's bit mask of continuous joints.)
    if dof == 0 || dof > MAX_DOF {
        return Err(backend_err(format!(
            "device planner: {dof} joints (1 to {MAX_DOF} supported)"
        )));
    }
    check_problems(space, problems, s.resolution, s.attempts)?;
    let max_threads = func
        .max_threads_per_block()
        .map_err(drv("reading the device planner's limits"))?;
    if i64::from(32 * s.warps) > i64::from(max_threads) {
        return Err(backend_err(format!(
            "device planner: {} warps need {} threads per block; this build of the kernel allows {max_threads} (its registers): ask for at most {} warps ({})",
            s.warps,
            32 * s.warps,
            max_threads / 32,
            crate::planners::device::DEVICE_WARPS_ENV
        )));
    }
    let cap = s.tree_capacity as usize;
    let k = s.attempts as usize;
    // (validate: extra attempts come with escalate_after >= 1.)
    let extra = s.extra_attempts as usize;
    let too_many = || backend_err("device planner: too many problems in one launch");
    let mains = n
        .checked_mul(k)
        .filter(|&b| b <= u32::MAX as usize)
        .ok_or_else(too_many)?;
    // Work items: every attempt of every problem (extra ones only when queued).
    let items = n
        .checked_mul(k + extra)
        .filter(|&b| b <= u32::MAX as usize)
        .ok_or_else(too_many)?;
    // About as many blocks as can be resident: they take the items from the kernel's queue
    // (more would only start as the first ones end, when nothing is left).
    let per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(32 * s.warps, 0, None)
        .map_or(0, |b| b as usize);
    let resident = per_sm * dev.sms;
    let blocks = if resident == 0 {
        items
    } else {
        items.min(resident)
    };
    let pool = mains
        .checked_mul(POOL_PER_PROBLEM)
        .filter(|&p| p <= u32::MAX as usize)
        .ok_or_else(too_many)?;
    let tree_slots = blocks
        .checked_mul(2 * cap)
        .filter(|&t| t.checked_mul(dof).is_some_and(|w| w < (1usize << 40)))
        .ok_or_else(|| backend_err("device planner: the trees do not fit on the device"))?;
    if dev.rrtc.is_none() {
        dev.rrtc = Some(RrtcBufs::new(dev)?);
    }
    let stream = dev.stream.clone();
    let Some(b) = dev.rrtc.as_mut() else {
        return Err(backend_err("device planner: buffers missing"));
    };
    let goals: usize = problems.iter().map(|p| p.goals.len()).sum();
    ensure_dev(&stream, &mut b.ends, (n + goals) * dof)?;
    ensure_dev(&stream, &mut b.goal_first, n + 1)?;
    ensure_dev(&stream, &mut b.bounds, 2 * dof)?;
    ensure_dev(&stream, &mut b.tree_q, tree_slots * dof)?;
    ensure_dev(&stream, &mut b.tree_parent, tree_slots)?;
    ensure_dev(&stream, &mut b.tree_radius, tree_slots)?;
    ensure_dev(&stream, &mut b.tree_fails, tree_slots)?;
    ensure_dev(&stream, &mut b.path, pool * dof)?;
    // Results: RESULT_WORDS per item (an attempt that never ran keeps zeros), the pool's
    // vertices taken, BEST_WORDS per problem and the queue (all zeroed before the launch).
    let counters = items * RESULT_WORDS;
    // Then each problem's start on the device clock: 2 words each, after at most one word
    // of alignment.
    let words_len = counters + 1 + BEST_WORDS * n + QUEUE_GAP + QUEUE_WORDS + 2 * n + 1;
    ensure_dev(&stream, &mut b.result, words_len)?;
    // Inputs: starts, then every problem's goals (problem i's from goal_first[i] up to
    // goal_first[i + 1]); lower bounds, then upper bounds.
    let mut ends = Vec::with_capacity((n + goals) * dof);
    for p in problems {
        ends.extend_from_slice(p.start);
    }
    let mut goal_first = Vec::with_capacity(n + 1);
    goal_first.push(0u32);
    for p in problems {
        for g in &p.goals {
            ends.extend_from_slice(g);
        }
        let taken = goal_first.last().copied().unwrap_or(0) as usize + p.goals.len();
        goal_first.push(u32::try_from(taken).map_err(|_| too_many())?);
    }
    let mut bounds = vec![0.0; 2 * dof];
    let mut continuous = 0u32;
    for j in 0..dof {
        let (lo, hi) = crate::planners::bounds(space, j);
        bounds[j] = lo;
        bounds[dof + j] = hi;
        if space.continuous.get(j).copied().unwrap_or(false) {
            continuous |= 1 << j;
        }
    }
    let copy_in = drv("copy to device");
    stream
        .memcpy_htod(&ends, &mut b.ends.slice_mut(0..ends.len()))
        .map_err(&copy_in)?;
    stream
        .memcpy_htod(&bounds, &mut b.bounds.slice_mut(0..bounds.len()))
        .map_err(&copy_in)?;
    stream
        .memcpy_htod(&goal_first, &mut b.goal_first.slice_mut(0..n + 1))
        .map_err(&copy_in)?;
    let mut zeroed = b.result.slice_mut(0..words_len);
    stream
        .memset_zeros(&mut zeroed)
        .map_err(drv("clearing the results"))?;
    if let Some((_, scene_of)) = multi {
        ensure_dev(&stream, &mut b.scene_of, n)?;
        stream
            .memcpy_htod(scene_of, &mut b.scene_of.slice_mut(0..n))
            .map_err(&copy_in)?;
    }
    let ptr = |p: u64, off_words: usize, word: usize| p + (off_words * word) as u64;
    let (ends_p, _g1) = b.ends.device_ptr(&stream);
    let (bounds_p, _g2) = b.bounds.device_ptr(&stream);
    let (tq, _g3) = b.tree_q.device_ptr(&stream);
    let (tp, _g4) = b.tree_parent.device_ptr(&stream);
    let (tr, _g5) = b.tree_radius.device_ptr(&stream);
    let (tf, _g6) = b.tree_fails.device_ptr(&stream);
    let (pa, _g7) = b.path.device_ptr(&stream);
    let (re, _g8) = b.result.device_ptr(&stream);
    let (gf, _g9) = b.goal_first.device_ptr(&stream);
    let params = RrtcParams {
        start: ends_p,
        goal: ptr(ends_p, n * dof, 8),
        goal_first: gf,
        lower: bounds_p,
        upper: ptr(bounds_p, dof, 8),
        tree_q: tq,
        tree_parent: tp,
        tree_radius: tr,
        tree_fails: tf,
        path: pa,
        result: re,
        path_used: ptr(re, counters, 4),
        best: ptr(re, counters + 1, 4),
        range: s.range,
        resolution: s.resolution,
        dd_radius: s.dd_radius,
        dd_alpha: DD_ALPHA,
        dd_min_factor: DD_MIN_RADIUS_FACTOR,
        step_floor_factor: STEP_FLOOR_FACTOR,
        seed: s.seed,
        time_limit_ns: u64::try_from(s.time_limit.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1),
        continuous,
        cap: s.tree_capacity,
        max_iterations: s.max_iterations,
        max_refinements: s.max_refinements,
        flags: u32::from(s.dynamic_domain) | (u32::from(s.balance_trees) << 1),
        stuck_after: STUCK_AFTER as u32,
        step_halve_after: STEP_HALVE_AFTER,
        path_pool: pool as u32,
        attempts: s.attempts,
        problems: n as u32,
        extra: extra as u32,
        escalate_after: s.escalate_after,
    };
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (32 * s.warps, 1, 1),
        shared_mem_bytes: 0,
    };
    {
        let args = dev.args;
        let mut lb = stream.launch_builder(func);
        lb.arg(&args);
        let scene_of_v;
        if let Some((scenes, _)) = multi {
            scene_of_v = b.scene_of.slice(0..n);
            lb.arg(&scenes.ranges).arg(&scenes.bases).arg(&scene_of_v);
        }
        lb.arg(&params);
        unsafe { lb.launch(cfg) }.map_err(drv("launching the device planner"))?;
    }
    let mut words = vec![0u32; counters + 1];
    stream
        .memcpy_dtoh(&b.result.slice(0..words.len()), &mut words)
        .map_err(drv("copy to host"))?;
    stream
        .synchronize()
        .map_err(drv("running the device planner"))?;
    // The paths: one copy of the part of the pool taken.
    let taken = words[counters] as usize;
    let mut path_words = vec![0.0f64; taken.min(pool) * dof];
    if taken > 0 && taken <= pool {
        stream
            .memcpy_dtoh(&b.path.slice(0..taken * dof), &mut path_words)
            .map_err(drv("copy to host"))?;
        stream.synchronize().map_err(drv("copying the paths"))?;
    }
    let race = Race {
        mains: k,
        escalate_after: (extra > 0).then_some(s.escalate_after),
    };
    let per = (k + extra) * RESULT_WORDS;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(problem_outcome(
            i,
            &words[i * per..(i + 1) * per],
            &path_words,
            dof,
            race,
        )?);
    }
    Ok(out)
}

/// How a problem's attempts race (`kernels/rrtc.cu`, "Escalation").
#[derive(Clone, Copy, Debug)]
struct Race {
    /// Main attempts per problem.
    mains: usize,
    /// With extra attempts: the iterations after which they join.
    escalate_after: Option<u32>,
}

impl Race {
    /// The key of attempt `a` solving at iteration `it` (`gmp_rrtc_key`): (iterations << 8) |
    /// attempt, an extra attempt's iterations counted from the escalation's.
    fn key(self, it: u32, a: usize) -> u64 {
        let offset = match self.escalate_after {
            Some(after) if a >= self.mains => after,
            _ => 0,
        };
        ((u64::from(it) + u64::from(offset)).min(0xff_ffff) << 8) | a as u64
    }

    /// The winner among `solved` (key (iterations << 8) | attempt, attempt): the smallest main
    /// key if it is within the escalation's iterations (or there is no escalation), else the
    /// smallest of all.
    fn winner(self, solved: &[(u64, usize)]) -> Option<(u64, usize)> {
        let main = solved
            .iter()
            .filter(|&&(_, a)| a < self.mains)
            .min()
            .copied();
        match (main, self.escalate_after) {
            (Some(m), Some(after)) if m.0 >> 8 <= u64::from(after) => Some(m),
            (Some(m), None) => Some(m),
            _ => solved.iter().min().copied(),
        }
    }
}

/// The outcome of problem `i` from the result words of its attempts (`RESULT_WORDS` each, in
/// attempt order; an attempt that never ran is all zeros) and the path pool: the winner of
/// [`Race::winner`]; the work is summed over the attempts and the device time is the longest.
fn problem_outcome(
    i: usize,
    words: &[u32],
    pool: &[f64],
    dof: usize,
    race: Race,
) -> Result<DeviceOutcome, CollisionError> {
    let mut solved: Vec<(u64, usize)> = Vec::new();
    let mut limit = false;
    let mut full = false;
    let mut motions = 0u64;
    let mut configs = 0u64;
    let mut device_us = 0u32;
    let mut iterations = 0u32;
    let mut vertices = 0u32;
    for (a, w) in words.chunks_exact(RESULT_WORDS).enumerate() {
        if w[9] == 0 {
            continue; // never ran (an extra attempt not needed)
        }
        let status = DeviceStatus::from_word(w[0]).ok_or_else(|| {
            backend_err(format!(
                "device planner: unknown status {} of problem {i} attempt {a}",
                w[0]
            ))
        })?;
        motions += u64::from(w[4]);
        configs += u64::from(w[5]) | (u64::from(w[6]) << 32);
        device_us = device_us.max(w[7]);
        match status {
            DeviceStatus::Solved => solved.push((race.key(w[2], a), a)),
            DeviceStatus::PathPoolFull => {
                return Err(backend_err(format!(
                    "device planner: the path pool of the launch is full (problem {i}); plan fewer problems at once"
                )))
            }
            DeviceStatus::Limit => limit = true,
            DeviceStatus::TreeFull => full = true,
            DeviceStatus::Beaten => {}
        }
        iterations = iterations.max(w[2]);
        vertices = vertices.max(w[3]);
    }
    let motions = u32::try_from(motions).unwrap_or(u32::MAX);
    let Some((_, a)) = race.winner(&solved) else {
        let status = if limit || !full {
            DeviceStatus::Limit
        } else {
            DeviceStatus::TreeFull
        };
        return Ok(DeviceOutcome {
            status,
            path: Vec::new(),
            iterations,
            vertices,
            motions,
            configs,
            device_us,
            attempt: 0,
        });
    };
    let w = &words[a * RESULT_WORDS..(a + 1) * RESULT_WORDS];
    let (len, offset) = (w[1] as usize, w[8] as usize);
    if len < 2 || (offset + len) * dof > pool.len() {
        return Err(backend_err(format!(
            "device planner: problem {i} reports a path of {len} vertices at {offset} of {}",
            pool.len() / dof.max(1)
        )));
    }
    Ok(DeviceOutcome {
        status: DeviceStatus::Solved,
        path: pool[offset * dof..(offset + len) * dof]
            .chunks_exact(dof)
            .map(<[f64]>::to_vec)
            .collect(),
        iterations: w[2],
        vertices: w[3],
        motions,
        configs,
        device_us,
        attempt: a as u32,
    })
}

/// Registers and local memory per thread of `func` and its blocks per multiprocessor at
/// `warps` warps per block, for reports.
pub(super) fn resources(func: &CudaFunction, warps: u32) -> String {
    let regs = func.num_regs().map_or(-1, |r| r);
    let local = func.local_size_bytes().map_or(-1, |l| l);
    let per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(32 * warps, 0, None)
        .map_or(0, |b| b);
    format!("{regs} registers, {local} B local per thread; {per_sm} blocks of {warps} warps per multiprocessor")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_laid_out_as_the_kernel_struct() {
        // 13 pointers, 6 doubles, 2 u64, 12 u32: 104 + 48 + 16 + 48 bytes, no padding.
        assert_eq!(std::mem::size_of::<RrtcParams>(), 216);
        assert_eq!(std::mem::align_of::<RrtcParams>(), 8);
    }

    #[test]
    fn race_winner_follows_the_escalation_rule() {
        let plain = Race {
            mains: 8,
            escalate_after: None,
        };
        let k = |r: Race, it: u32, a: usize| (r.key(it, a), a);
        assert_eq!(plain.winner(&[]), None);
        let (p9_3, p7_5, p7_2) = (k(plain, 9, 3), k(plain, 7, 5), k(plain, 7, 2));
        assert_eq!(plain.winner(&[p9_3, p7_5]), Some(p7_5));
        assert_eq!(plain.winner(&[p7_5, p7_2]), Some(p7_2));
        // Without escalation the attempt number adds no iterations.
        assert_eq!(plain.key(10, 9), (10 << 8) | 9);
        let esc = Race {
            mains: 8,
            escalate_after: Some(32),
        };
        // Keys: an extra attempt (8 and up) counts from the escalation's 32 iterations.
        assert_eq!(esc.key(10, 4), (10 << 8) | 4);
        assert_eq!(esc.key(10, 9), (42 << 8) | 9);
        assert_eq!(esc.key(u32::MAX, 9), (0xff_ffff << 8) | 9);
        // An attempt solving at (iterations, attempt). Cases (the solved, the winner): a main
        // attempt within 32 iterations wins; past them the smallest key of all.
        type Solve = (u32, usize);
        let cases: [(&[Solve], Solve); 6] = [
            (&[(30, 4), (1, 9)], (30, 4)),
            (&[(32, 4), (1, 9)], (32, 4)),
            (&[(40, 4), (9, 9)], (40, 4)),
            (&[(42, 4), (9, 9)], (9, 9)),
            (&[(50, 4), (9, 9)], (9, 9)),
            (&[(9, 20), (9, 9)], (9, 9)),
        ];
        for (solved, (it, a)) in cases {
            let keys: Vec<(u64, usize)> = solved.iter().map(|&(i, at)| k(esc, i, at)).collect();
            assert_eq!(esc.winner(&keys), Some(k(esc, it, a)), "{solved:?}");
        }
        // Only extra attempts solved.
        assert_eq!(esc.winner(&[k(esc, 3, 9)]), Some(k(esc, 3, 9)));
    }

    /// Joint `a` in `[lo, hi]`, joint `b` continuous.
    fn two_joints(lo: f64, hi: f64) -> JointSpace {
        JointSpace {
            names: vec!["a".into(), "b".into()],
            lower: vec![lo, -10.0],
            upper: vec![hi, 10.0],
            continuous: vec![false, true],
            max_velocity: vec![1.0, 1.0],
            max_acceleration: vec![1.0, 1.0],
            max_jerk: vec![f64::INFINITY; 2],
        }
    }

    #[test]
    fn launch_order_puts_the_farthest_problems_first() {
        let space = two_joints(-3.0, 3.0);
        let o = [0.0, 0.0];
        let near = [0.5, 0.0];
        let far = [2.0, 0.0];
        // 6 rad on the continuous joint is 0.28 rad around the circle.
        let wrapped = [0.0, 6.0];
        let tie = [0.0, 0.5];
        let mut problems: Vec<DeviceProblem<'_>> = [
            (&o, &near),
            (&o, &far),
            (&o, &wrapped),
            (&o, &tie),
            (&far, &o),
        ]
        .into_iter()
        .map(|(s, g)| DeviceProblem::new(s, g))
        .collect();
        assert_eq!(launch_order(&space, &problems), vec![1, 4, 0, 3, 2]);
        assert!(launch_order(&space, &[]).is_empty());
        // A goal set counts by its nearest goal: problem 1 with `near` too goes after 0 (tie,
        // the order given).
        problems[1].goals.push(&near);
        assert_eq!(launch_order(&space, &problems), vec![4, 0, 1, 3, 2]);
    }

    #[test]
    fn sampling_bounds_wrap_continuous_joints() {
        let space = two_joints(-1.0, 2.0);
        assert_eq!(crate::planners::bounds(&space, 0), (-1.0, 2.0));
        assert_eq!(
            crate::planners::bounds(&space, 1),
            (-std::f64::consts::PI, std::f64::consts::PI)
        );
        let good = [0.5, 3.0];
        let outside = [2.5, 0.0];
        let check = |p: &[DeviceProblem<'_>], res: f64| check_problems(&space, p, res, 1);
        assert!(check(&[DeviceProblem::new(&good, &good)], 0.02).is_ok());
        let e =
            check(&[DeviceProblem::new(&good, &outside)], 0.02).expect_err("outside the limits");
        assert!(e.to_string().contains("goal of problem 0"), "{e}");
        // 0.5 apart: at 1e-7, 5e6 configurations per pass.
        let near = [1.0, 3.0];
        assert!(check(&[DeviceProblem::new(&good, &near)], 0.02).is_ok());
        let e = check(&[DeviceProblem::new(&good, &near)], 1e-7).expect_err("too fine");
        assert!(
            e.to_string().contains("too fine for the device planner"),
            "{e}"
        );
        // A goal set: each goal named, and no more goals than attempts.
        let set = [DeviceProblem {
            start: &good,
            goals: vec![&near, &outside],
        }];
        let e = check_problems(&space, &set, 0.02, 2).expect_err("goal 1 outside");
        assert!(e.to_string().contains("goal 1 of problem 0"), "{e}");
        let e = check(&set, 0.02).expect_err("two goals, one attempt");
        assert!(e.to_string().contains("problem 0 has 2 goals"), "{e}");
        let none = [DeviceProblem {
            start: &good,
            goals: Vec::new(),
        }];
        assert!(check(&none, 0.02).is_err());
        let short = [0.5];
        assert!(matches!(
            check(&[DeviceProblem::new(&short, &good)], 0.02),
            Err(CollisionError::WrongDof {
                expected: 2,
                got: 1
            })
        ));
    }
}
