//! Many planning problems in one call: the same robot, scene and planner options, each problem
//! its own start and goal ([`plan_many`]).
//!
//! With the device RRT-Connect (`on_device`) and a GPU checker, every admitted problem is
//! planned in **one** device launch (each attempt of each problem a block; see
//! [`super::device`]), then each raw path is shortcut, timed and re-validated on the host like
//! a single plan's, the problems spread over the host's cores. A problem's result is the one
//! [`super::plan`] gives it alone: the device plans of a launch do not depend on the other
//! problems in it (`tests/gpu_planner.rs` checks this) and the rest depends only on the raw
//! path and the seed. Its timing differs: every problem of the launch reports the launch's
//! planning time (its own device time is in [`PlanStats::device_time`](super::PlanStats)).
//!
//! Otherwise (another planner, or no device) each problem is planned by [`super::plan`], the
//! problems spread over the host's cores (the results do not depend on how), so a caller can
//! use one code path whatever the machine has.
//!
//! A problem that cannot be planned (a start in collision, no path within the limits) gets its
//! error in its own slot; the others are planned as usual.

use std::time::{Duration, Instant};

use super::device::{check_straight, raw_solution, settings_for_request};
use super::{
    admit_limits, admit_verdicts, complete, plan, trivial_solution, CountingChecker, PlanError,
    PlanRequest, PlanResult, PlannerId, Planning, RawSolution,
};
use crate::collision::{Checker, CollisionError, ConfigBatch};

/// Plans from `ends[i].0` to `ends[i].1` for every `i` with the options of `template` (its own
/// start and goals are ignored), in the order given. See the module documentation for how the
/// work is shared.
pub fn plan_many(
    checker: &dyn Checker,
    template: &PlanRequest,
    ends: &[(Vec<f64>, Vec<f64>)],
) -> Vec<Result<PlanResult, PlanError>> {
    let request = |(start, goal): &(Vec<f64>, Vec<f64>)| PlanRequest {
        start: start.clone(),
        goal: goal.clone(),
        other_goals: Vec::new(),
        ..template.clone()
    };
    if !one_launch(checker, template) || ends.is_empty() {
        // Each problem planned by `plan` (which gives the clear error of an on-device request
        // without a device), the problems spread over the host's cores.
        return parallel_map(ends.len(), |i| plan(checker, &request(&ends[i])));
    }
    plan_on_device(
        checker,
        template,
        &ends.iter().map(request).collect::<Vec<_>>(),
    )
}

/// Whether [`plan_many`] plans the problems of `template` on `checker` in one device launch
/// (the device RRT-Connect asked for, and a checker with a device planner).
pub fn one_launch(checker: &dyn Checker, template: &PlanRequest) -> bool {
    template.on_device
        && template.planner == PlannerId::RrtConnect
        && checker.device_planner().is_some()
}

/// A problem on its way through [`plan_on_device`].
enum Stage {
    /// Refused or finished (with an error or a result).
    Done(Result<PlanResult, PlanError>),
    /// Admitted, its raw path known without planning.
    Raw(PlanRequest, RawSolution),
    /// Admitted, waiting for the launch.
    Launch(PlanRequest),
    /// Planned by the launch.
    Planned(PlanRequest, RawSolution, Planning),
}

/// [`plan_many`] with the device RRT-Connect: admission, one launch, then the host's part of
/// every plan on the host's cores.
fn plan_on_device(
    checker: &dyn Checker,
    template: &PlanRequest,
    reqs: &[PlanRequest],
) -> Vec<Result<PlanResult, PlanError>> {
    let started = Instant::now();
    let space = checker.space().clone();
    let counters: Vec<CountingChecker<'_>> =
        reqs.iter().map(|_| CountingChecker::new(checker)).collect();
    // Admission as `plan` does it, with the starts and goals of every problem within its
    // limits checked in one call (one launch on a GPU rather than one per problem), each
    // problem's counter counting its own two configurations as one call, as alone.
    let limits: Vec<Result<PlanRequest, PlanError>> =
        reqs.iter().map(|req| admit_limits(checker, req)).collect();
    let rows: Vec<&[f64]> = limits
        .iter()
        .flatten()
        .flat_map(|r| [r.start.as_slice(), r.goal.as_slice()])
        .collect();
    let verdicts = if rows.is_empty() {
        Ok(Vec::new())
    } else {
        ConfigBatch::from_rows(space.dof(), &rows).and_then(|b| checker.check_configs(&b))
    }
    .and_then(|v| {
        if v.len() == rows.len() {
            Ok(v)
        } else {
            Err(CollisionError::Backend {
                backend: checker.backend().name().to_string(),
                message: format!("{} verdicts for {} configurations", v.len(), rows.len()),
            })
        }
    });
    let mut next = 0;
    let admitted: Vec<Result<PlanRequest, PlanError>> = limits
        .into_iter()
        .zip(&counters)
        .map(|(r, counting)| {
            let resolved = r?;
            counting.count_configs(2);
            let v = verdicts
                .as_ref()
                .map_err(|e| PlanError::Checker(e.clone()))?;
            next += 2;
            admit_verdicts(resolved, &v[next - 2..next], counting)
        })
        .collect();
    let mut stages: Vec<Stage> = admitted
        .into_iter()
        .map(|admitted| match admitted {
            Err(e) => Stage::Done(Err(e)),
            Ok(req) => match trivial_solution(&space, &req) {
                Some(raw) => Stage::Raw(req, raw),
                None => match check_straight(&space, &req.start, &req.goal, req.resolution) {
                    Err(e) => Stage::Done(Err(PlanError::InvalidRequest(e))),
                    Ok(()) => Stage::Launch(req),
                },
            },
        })
        .collect();
    // One launch for every problem waiting for it, with the template's settings (the options
    // are the same for all; only the ends differ).
    let waiting: Vec<usize> = (0..stages.len())
        .filter(|&i| matches!(stages[i], Stage::Launch(_)))
        .collect();
    if !waiting.is_empty() {
        let settings = settings_for_request(template, &space, template.time_limit);
        let pairs: Vec<(&[f64], &[f64])> = waiting
            .iter()
            .filter_map(|&i| match &stages[i] {
                Stage::Launch(r) => Some((r.start.as_slice(), r.goal.as_slice())),
                _ => None,
            })
            .collect();
        let launched = settings
            .validate()
            .map_err(PlanError::InvalidRequest)
            .and_then(|()| match checker.device_planner() {
                Some(d) => d.rrt_connect(&pairs, &settings).map_err(PlanError::Checker),
                None => Err(PlanError::InvalidRequest(
                    "on_device needs a GPU checker".into(),
                )),
            });
        let time = started.elapsed();
        let launched = launched.and_then(|outcomes| {
            if outcomes.len() == waiting.len() {
                Ok(outcomes)
            } else {
                Err(PlanError::Checker(
                    crate::collision::CollisionError::Backend {
                        backend: "cuda".into(),
                        message: format!(
                            "the device planner returned {} results for {} problems",
                            outcomes.len(),
                            waiting.len()
                        ),
                    },
                ))
            }
        });
        match launched {
            Ok(outcomes) => {
                for (&i, o) in waiting.iter().zip(outcomes) {
                    let stage = std::mem::replace(&mut stages[i], Stage::Done(Err(left_out())));
                    let Stage::Launch(req) = stage else {
                        stages[i] = stage;
                        continue;
                    };
                    let planning = Planning {
                        time,
                        attempts_run: (settings.attempts as usize, o.attempt as usize),
                        device_work: (u64::from(o.motions), o.configs),
                        device_time: Some(Duration::from_micros(u64::from(o.device_us))),
                    };
                    stages[i] = match raw_solution(o, &req) {
                        Ok(raw) => Stage::Planned(req, raw, planning),
                        Err(e) => Stage::Done(Err(e)),
                    };
                }
            }
            // The launch's error is every waiting problem's (a refused setting or the device).
            Err(e) => {
                for &i in &waiting {
                    stages[i] = Stage::Done(Err(match &e {
                        PlanError::Checker(c) => PlanError::Checker(c.clone()),
                        PlanError::InvalidRequest(m) => PlanError::InvalidRequest(m.clone()),
                        other => PlanError::InvalidRequest(other.to_string()),
                    }));
                }
            }
        }
    }
    // The host's part of each plan (shortcut, timing, re-validation), the problems spread
    // over the host's cores; each problem's checks go through its own counter.
    let stages: Vec<std::sync::Mutex<Option<Stage>>> = stages
        .into_iter()
        .map(|s| std::sync::Mutex::new(Some(s)))
        .collect();
    parallel_map(stages.len(), |i| {
        let stage = stages[i].lock().ok().and_then(|mut s| s.take());
        let counting = &counters[i];
        match stage {
            Some(Stage::Done(r)) => r,
            Some(Stage::Raw(req, raw)) => {
                let planning = Planning {
                    time: started.elapsed(),
                    ..Planning::default()
                };
                complete(counting, &req, raw, planning)
            }
            Some(Stage::Planned(req, raw, planning)) => complete(counting, &req, raw, planning),
            Some(Stage::Launch(_)) | None => Err(left_out()),
        }
    })
}

/// `f(0..n)` in order, computed on up to as many threads as the host has cores, each thread
/// taking the next index when it is done with one (problems differ widely in cost). The
/// results do not depend on which thread computes what. Plain scoped threads, not rayon's
/// pool: a plan may hold a checker's lock (the GPU's) while its checks use rayon, and a rayon
/// worker waiting there could pick up another plan that needs the same lock.
pub(crate) fn parallel_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, n.max(1));
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = Vec::with_capacity(n);
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (f, next) = (&f, &next);
                sc.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        mine.push((i, f(i)));
                    }
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(mine) => done.extend(mine),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// The error of a problem the launch returned no result for (not expected: the launch returns
/// one per problem or fails as a whole).
fn left_out() -> PlanError {
    PlanError::InvalidRequest("the device planner returned no result for this problem".into())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::cli::demo::{bundled, DEMO_QUERIES};
    use crate::collision::{
        Backend, CheckerOptions, CollisionError, ConfigBatch, CpuChecker, MotionBatch,
    };
    use crate::planners::device::{
        DeviceOutcome, DevicePlanner, DeviceProblem, DeviceRrtcSettings, DeviceStatus,
    };
    use crate::robot::JointSpace;

    /// The bundled arm's CPU checker with a stand-in device planner (no GPU in CI): a "launch"
    /// plans each of its problems with the host RRT-Connect from the launch's seed, so a
    /// problem's raw path does not depend on the others, as on the device. It records the
    /// problems of every launch and each problem's goals and attempts, and never reaches the
    /// goal `unreachable` (a problem with no other goal: "no path"). A goal set is planned by
    /// the host planner as one, the winning attempt being the first for the goal reached.
    struct StandIn {
        cpu: CpuChecker,
        launches: Mutex<Vec<usize>>,
        /// (goals, attempts) of every problem planned.
        goal_sets: Mutex<Vec<(usize, u32)>>,
        /// Configuration calls (the device planner's own plans excluded).
        config_calls: std::sync::atomic::AtomicUsize,
        unreachable: Vec<f64>,
    }

    impl DevicePlanner for StandIn {
        fn rrt_connect_sets(
            &self,
            problems: &[DeviceProblem<'_>],
            settings: &DeviceRrtcSettings,
        ) -> Result<Vec<DeviceOutcome>, CollisionError> {
            if let Ok(mut l) = self.launches.lock() {
                l.push(problems.len());
            }
            if let Ok(mut l) = self.goal_sets.lock() {
                l.extend(problems.iter().map(|p| (p.goals.len(), settings.attempts)));
            }
            Ok(problems
                .iter()
                .map(|p| {
                    let reachable: Vec<(usize, &[f64])> = p
                        .goals
                        .iter()
                        .copied()
                        .enumerate()
                        .filter(|&(_, g)| g != self.unreachable.as_slice())
                        .collect();
                    let plan = reachable.first().and_then(|&(_, first)| {
                        let mut req = PlanRequest::new(
                            p.start.to_vec(),
                            first.to_vec(),
                            PlannerId::RrtConnect,
                        );
                        req.other_goals = reachable[1..].iter().map(|(_, g)| g.to_vec()).collect();
                        req.seed = settings.seed;
                        req.shortcut_rounds = 0;
                        plan(&self.cpu, &req).ok()
                    });
                    let attempt = plan
                        .as_ref()
                        .and_then(|p| reachable.get(p.reached_goal))
                        .map_or(0, |&(k, _)| k as u32);
                    DeviceOutcome {
                        status: if plan.is_some() {
                            DeviceStatus::Solved
                        } else {
                            DeviceStatus::Limit
                        },
                        iterations: plan.as_ref().map_or(7, |p| p.stats.iterations as u32),
                        vertices: 2,
                        motions: 1,
                        configs: 1,
                        device_us: 1,
                        attempt,
                        path: plan.map(|p| p.raw_path).unwrap_or_default(),
                    }
                })
                .collect())
        }
    }

    impl Checker for StandIn {
        fn space(&self) -> &JointSpace {
            self.cpu.space()
        }
        fn check_configs(&self, c: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
            self.config_calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.cpu.check_configs(c)
        }
        fn check_motions_refined(
            &self,
            m: &MotionBatch,
            resolution: f64,
            max_refinements: u32,
        ) -> Result<Vec<bool>, CollisionError> {
            self.cpu
                .check_motions_refined(m, resolution, max_refinements)
        }
        fn backend(&self) -> Backend {
            self.cpu.backend()
        }
        fn device_planner(&self) -> Option<&dyn DevicePlanner> {
            Some(self)
        }
    }

    fn stand_in() -> StandIn {
        let (robot, scene) = bundled().expect("bundled robot");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let cpu = CpuChecker::new(&robot, &group, &base, &scene, CheckerOptions::default())
            .expect("checker");
        StandIn {
            cpu,
            launches: Mutex::new(Vec::new()),
            goal_sets: Mutex::new(Vec::new()),
            config_calls: std::sync::atomic::AtomicUsize::new(0),
            unreachable: vec![0.3, -0.5, 1.0, -1.0, 0.7, 0.2],
        }
    }

    /// A configuration of the bundled arm in collision (seeded search).
    fn in_collision(c: &StandIn) -> Vec<f64> {
        let space = c.space().clone();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        loop {
            let q = space.sample_uniform(&mut rng);
            if !c.check_config(&q).expect("check") {
                return q;
            }
        }
    }

    fn ends(c: &StandIn) -> Vec<(Vec<f64>, Vec<f64>)> {
        let (_, s0, g0) = DEMO_QUERIES[0];
        let (_, s1, g1) = DEMO_QUERIES[1];
        assert!(c.check_config(&c.unreachable).expect("check"));
        vec![
            (s0.to_vec(), g0.to_vec()),
            (in_collision(c), g1.to_vec()),
            (s1.to_vec(), g1.to_vec()),
            (s0.to_vec(), c.unreachable.clone()),
            (s1.to_vec(), s1.to_vec()),
        ]
    }

    /// `plan` of `template` from `ends.0` to `ends.1`, which must succeed.
    fn alone(c: &StandIn, template: &PlanRequest, ends: &(Vec<f64>, Vec<f64>)) -> PlanResult {
        let req = PlanRequest {
            start: ends.0.clone(),
            goal: ends.1.clone(),
            ..template.clone()
        };
        plan(c, &req).expect("solved alone")
    }

    /// Each problem's result is the one `plan` gives it alone (path, raw path, trajectory),
    /// errors stay in their own slots, and the device plans every admitted problem in one
    /// launch.
    #[test]
    fn a_batch_on_the_device_gives_each_problem_its_single_plan_in_one_launch() {
        let c = stand_in();
        let ends = ends(&c);
        let mut template = PlanRequest::new(Vec::new(), Vec::new(), PlannerId::RrtConnect);
        template.on_device = true;
        template.seed = 11;
        // Every start and goal is checked in one call (here the only one: no problem but the
        // trivial one, left out, validates a single configuration afterwards).
        c.config_calls
            .store(0, std::sync::atomic::Ordering::Relaxed);
        let _ = plan_many(&c, &template, &ends[..4]);
        assert_eq!(c.config_calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        c.launches.lock().unwrap().clear();
        let results = plan_many(&c, &template, &ends);
        // The problem in collision is refused before the launch, the trivial one needs none.
        assert_eq!(*c.launches.lock().unwrap(), vec![3]);
        assert_eq!(results.len(), ends.len());
        assert!(
            matches!(results[1], Err(PlanError::InvalidStart(_))),
            "{:?}",
            results[1].as_ref().err()
        );
        assert!(
            matches!(results[3], Err(PlanError::NoPath { iterations: 7, .. })),
            "{:?}",
            results[3].as_ref().err()
        );
        for i in [0, 2, 4] {
            let got = results[i].as_ref().expect("solved");
            let alone = alone(&c, &template, &ends[i]);
            assert_eq!(got.raw_path, alone.raw_path, "problem {i}");
            assert_eq!(got.path, alone.path, "problem {i}");
            // The shared admission is counted as each problem's own call of two.
            assert_eq!(
                (got.stats.configs_checked, got.stats.config_batches),
                (alone.stats.configs_checked, alone.stats.config_batches),
                "problem {i}"
            );
            assert_eq!(got.trajectory.points.len(), alone.trajectory.points.len());
            assert_eq!(got.path.first(), Some(&ends[i].0));
            assert_eq!(got.path.last(), Some(&ends[i].1));
            // Re-validated: every motion of the returned path is free at the resolution.
            let mut m = MotionBatch::new(c.space().dof());
            for w in got.path.windows(2) {
                m.push(&w[0], &w[1]).unwrap();
            }
            assert!(c
                .check_motions(&m, template.resolution)
                .unwrap()
                .iter()
                .all(|&v| v));
        }
        // The launch's problems report the device's work and time.
        let solved = results[0].as_ref().unwrap();
        assert_eq!(solved.stats.device_time, Some(Duration::from_micros(1)));
    }

    /// A goal set on the device is one problem of one launch with every goal, the attempts
    /// rounded up to a multiple of the goals; the plan ends at the goal the launch reached.
    #[test]
    fn a_goal_set_on_the_device_is_one_problem_with_every_goal() {
        let c = stand_in();
        let (_, s0, g0) = DEMO_QUERIES[0];
        let mut req = PlanRequest::new(s0.to_vec(), c.unreachable.clone(), PlannerId::RrtConnect);
        req.other_goals = vec![in_collision(&c), g0.to_vec()];
        req.on_device = true;
        req.attempts = 4;
        req.seed = 3;
        let res = plan(&c, &req).expect("the reachable goal");
        // The goal in collision is left out at admission: two goals, 4 attempts (2 each).
        assert_eq!(*c.launches.lock().unwrap(), vec![1]);
        assert_eq!(*c.goal_sets.lock().unwrap(), vec![(2, 4)]);
        // The stand-in reaches g0; the host may then retarget the path to the goal the
        // stand-in calls unreachable (free and in straight sight here), never to the one in
        // collision.
        let ends_at = |r: &PlanResult| match r.reached_goal {
            0 => Some(c.unreachable.clone()),
            2 => Some(g0.to_vec()),
            _ => None,
        };
        assert!(ends_at(&res).is_some(), "reached {}", res.reached_goal);
        assert_eq!(res.path.last().cloned(), ends_at(&res));
        // Three attempts for two goals become four.
        req.attempts = 3;
        c.goal_sets.lock().unwrap().clear();
        let again = plan(&c, &req).expect("the reachable goal");
        assert_eq!(*c.goal_sets.lock().unwrap(), vec![(2, 4)]);
        assert_eq!(again.path.last().cloned(), ends_at(&again));
        // Only the unreachable goal (and the one in collision): no path.
        req.other_goals.pop();
        assert!(matches!(plan(&c, &req), Err(PlanError::NoPath { .. })));
    }

    /// Without `on_device` each problem is planned by `plan` (on the host's cores): the same
    /// results as `plan`, and no launch.
    #[test]
    fn a_batch_on_the_host_is_the_single_plans() {
        let c = stand_in();
        let ends = ends(&c);
        let mut template = PlanRequest::new(Vec::new(), Vec::new(), PlannerId::RrtConnect);
        template.seed = 4;
        template.time_limit = Duration::from_millis(300);
        let results = plan_many(&c, &template, &ends[..3]);
        assert!(c.launches.lock().unwrap().is_empty());
        assert!(matches!(results[1], Err(PlanError::InvalidStart(_))));
        for i in [0, 2] {
            let alone = alone(&c, &template, &ends[i]);
            assert_eq!(results[i].as_ref().expect("solved").path, alone.path);
        }
        assert!(plan_many(&c, &template, &[]).is_empty());
    }

    /// `parallel_map` keeps the order and computes every index once, whatever the threads.
    #[test]
    fn parallel_map_is_the_sequential_map() {
        // Uneven work, so that threads overtake each other.
        let work = |i: usize| {
            (0..(i % 7) * 1000).fold(i as u64, |a, k| a.wrapping_mul(31).wrapping_add(k as u64))
        };
        for n in [0, 1, 2, 37] {
            let calls = std::sync::atomic::AtomicUsize::new(0);
            let got = parallel_map(n, |i| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                work(i)
            });
            assert_eq!(got, (0..n).map(work).collect::<Vec<_>>());
            assert_eq!(calls.into_inner(), n);
        }
    }

    /// Bad options are every problem's error, and nothing is launched.
    #[test]
    fn bad_options_are_each_problems_error() {
        let c = stand_in();
        let ends = ends(&c);
        let mut template = PlanRequest::new(Vec::new(), Vec::new(), PlannerId::RrtConnect);
        template.on_device = true;
        template.resolution = -1.0;
        let results = plan_many(&c, &template, &ends);
        assert!(results
            .iter()
            .all(|r| matches!(r, Err(PlanError::InvalidRequest(m)) if m.contains("resolution"))));
        assert!(c.launches.lock().unwrap().is_empty());
    }
}
