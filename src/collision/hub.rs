//! Shared launches across problems: many planners, one batched checker.
//!
//! A planner issues its collision work in batches, but one problem's batches are small (an
//! RRT-Connect round asks for a few dozen configurations or motions), far below what a GPU
//! launch can hold. A [`LaunchHub`] lets many planners, each solving its own problem in its own
//! thread and scene, share launches: every planner gets a [`HubChecker`] (a [`Checker`] bound
//! to its scene) whose requests go to the hub's dispatcher thread, which gathers the requests
//! of all planners, runs them as one batch of configurations and one batch of motions on a
//! [`BatchExecutor`] (the CUDA one: `crate::gpu::hub::CudaBatch`, where each item carries its
//! scene), and hands each planner its verdicts.
//!
//! The dispatcher starts a round when every live client is waiting for an answer, or when the
//! oldest waiting request has waited [`HubOptions::max_wait`] (a client busy on the CPU does not
//! hold the others back for longer). Verdicts are those of a checker holding the client's scene
//! alone: the executor runs the same per-item arithmetic, so a planner answers the same with a
//! hub client as with its own checker of the same backend (tests check both).

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cpu::{
    prepare_motions, refine_motions_up_to, validate_batch, MotionStatus, PreparedMotions,
};
use super::{Backend, Checker, CollisionError, ConfigBatch, CpuChecker, MotionBatch, Scratch};
use crate::robot::JointSpace;

/// Runs the gathered requests of a round: items of several scenes in one batch.
pub trait BatchExecutor: Send {
    /// Number of scenes (valid scene indices are `0..scenes()`).
    fn scenes(&self) -> usize;

    /// Verdicts (`true` = free) of row-major f32 configurations, configuration `i` in scene
    /// `scene_of[i]`.
    fn check_configs(
        &mut self,
        values: &[f32],
        scene_of: &[u32],
    ) -> Result<Vec<bool>, CollisionError>;

    /// Status of each prepared motion (one round, no refinement: see
    /// `refine_motions`), motion `i` in scene `scene_of[i]`.
    fn motion_statuses(
        &mut self,
        p: &PreparedMotions,
        scene_of: &[u32],
    ) -> Result<Vec<MotionStatus>, CollisionError>;

    /// The backend that runs the checks.
    fn backend(&self) -> Backend;

    /// Milliseconds the executor's device spent on copies and kernels so far (0 where it does
    /// not measure it).
    fn device_ms(&self) -> f64 {
        0.0
    }
}

/// How the dispatcher gathers requests.
#[derive(Clone, Copy, Debug)]
pub struct HubOptions {
    /// Longest time a request waits for the other live clients' requests before its round
    /// starts.
    pub max_wait: Duration,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            max_wait: Duration::from_micros(50),
        }
    }
}

/// Counts of a hub's work so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HubStats {
    /// Rounds run (each at most one configuration batch and one motion batch).
    pub rounds: u64,
    /// Requests answered.
    pub requests: u64,
    /// Executor calls: configuration batches plus motion batches.
    pub batches: u64,
    /// Configurations checked.
    pub configs: u64,
    /// Motions checked (each refinement level counts again).
    pub motions: u64,
    /// Rounds started by the wait limit rather than by every live client waiting.
    pub timed_out_rounds: u64,
    /// The executors' [`BatchExecutor::device_ms`] over the rounds, summed.
    pub device_ms: f64,
}

enum Work {
    Configs(Vec<f32>),
    Motions(PreparedMotions),
}

enum Answer {
    Configs(Vec<bool>),
    Motions(Vec<MotionStatus>),
}

struct Request {
    scene: u32,
    work: Work,
    reply: SyncSender<Result<Answer, CollisionError>>,
    since: Instant,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Request>,
    /// Clients alive (each may have a request pending).
    live: usize,
    /// Requests a dispatcher has taken and not yet answered.
    in_rounds: usize,
    shutdown: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    stats: Mutex<HubStats>,
    scenes: usize,
    backend: Backend,
    dof: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn stopped() -> CollisionError {
    CollisionError::Backend {
        backend: "hub".into(),
        message: "the launch hub has stopped".into(),
    }
}

/// The dispatcher of shared launches (see the module documentation). Dropping it stops the
/// dispatcher once the pending requests are answered; clients still alive then get an error
/// on their next request.
pub struct LaunchHub {
    shared: Arc<Shared>,
    space: JointSpace,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for LaunchHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchHub")
            .field("scenes", &self.shared.scenes)
            .field("backend", &self.shared.backend)
            .finish()
    }
}

impl LaunchHub {
    /// Starts the dispatcher thread over `executor`, for configurations of `space`.
    pub fn new(
        executor: Box<dyn BatchExecutor>,
        space: JointSpace,
        opts: HubOptions,
    ) -> Result<Self, CollisionError> {
        Self::with_executors(vec![executor], space, opts)
    }

    /// Starts one dispatcher thread per executor (all holding the same scenes, e.g. two
    /// [`crate::gpu::hub::CudaBatch`] on one device, each with its own stream and buffers):
    /// while one executor's round runs, the next round gathers and starts on another, so the
    /// device and the planners' CPU work overlap.
    pub fn with_executors(
        executors: Vec<Box<dyn BatchExecutor>>,
        space: JointSpace,
        opts: HubOptions,
    ) -> Result<Self, CollisionError> {
        let hub_err = |message: String| CollisionError::Backend {
            backend: "hub".into(),
            message,
        };
        let Some(first) = executors.first() else {
            return Err(hub_err("a launch hub needs at least one executor".into()));
        };
        let (scenes, backend) = (first.scenes(), first.backend());
        if executors
            .iter()
            .any(|e| e.scenes() != scenes || e.backend() != backend)
        {
            return Err(hub_err(
                "the executors of a launch hub must hold the same scenes on the same backend"
                    .into(),
            ));
        }
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stats: Mutex::new(HubStats::default()),
            scenes,
            backend,
            dof: space.dof(),
        });
        let mut hub = Self {
            shared,
            space,
            threads: Vec::new(),
        };
        for (k, exec) in executors.into_iter().enumerate() {
            let s = hub.shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("gmp-launch-hub-{k}"))
                .spawn(move || dispatch(&s, exec, opts))
                .map_err(|e| hub_err(format!("cannot start a dispatcher thread: {e}")))?;
            // On an error, dropping `hub` stops the dispatchers already started.
            hub.threads.push(t);
        }
        Ok(hub)
    }

    /// A checker for scene `scene` whose requests share the hub's launches.
    pub fn client(&self, scene: usize) -> Result<HubChecker, CollisionError> {
        if scene >= self.shared.scenes {
            return Err(CollisionError::Backend {
                backend: "hub".into(),
                message: format!(
                    "scene {scene} out of range: the hub holds {} scenes",
                    self.shared.scenes
                ),
            });
        }
        lock(&self.shared.queue).live += 1;
        Ok(HubChecker {
            shared: self.shared.clone(),
            scene: scene as u32,
            space: self.space.clone(),
        })
    }

    /// Work done so far.
    pub fn stats(&self) -> HubStats {
        *lock(&self.shared.stats)
    }
}

impl Drop for LaunchHub {
    fn drop(&mut self) {
        lock(&self.shared.queue).shutdown = true;
        self.shared.wake.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The dispatcher loop: gathers a round of requests, runs it, answers, until shut down.
fn dispatch(shared: &Shared, mut exec: Box<dyn BatchExecutor>, opts: HubOptions) {
    loop {
        let (round, timed_out) = {
            let mut q = lock(&shared.queue);
            while q.pending.is_empty() && !q.shutdown {
                q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.pending.is_empty() {
                return;
            }
            // Wait for the other live clients (those not waiting on another dispatcher's round),
            // at most max_wait after the oldest request.
            let deadline = q
                .pending
                .iter()
                .map(|r| r.since)
                .min()
                .unwrap_or_else(Instant::now)
                + opts.max_wait;
            let mut timed_out = false;
            while q.pending.len() + q.in_rounds < q.live && !q.shutdown {
                let now = Instant::now();
                if now >= deadline {
                    timed_out = true;
                    break;
                }
                q = shared
                    .wake
                    .wait_timeout(q, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            q.in_rounds += q.pending.len();
            (std::mem::take(&mut q.pending), timed_out)
        };
        let n = round.len();
        run_round(shared, exec.as_mut(), round, timed_out);
        lock(&shared.queue).in_rounds -= n;
        // Another dispatcher may be waiting for these clients' next requests.
        shared.wake.notify_all();
    }
}

/// One round: the configuration requests as one batch, the motion requests as another.
fn run_round(shared: &Shared, exec: &mut dyn BatchExecutor, round: Vec<Request>, timed_out: bool) {
    let device_before = exec.device_ms();
    let (mut configs, mut motions) = (Vec::new(), Vec::new());
    for r in round {
        match r.work {
            Work::Configs(ref v) if !v.is_empty() => configs.push(r),
            Work::Motions(ref p) if !p.segments.is_empty() => motions.push(r),
            Work::Configs(_) => {
                let _ = r.reply.send(Ok(Answer::Configs(Vec::new())));
            }
            Work::Motions(_) => {
                let _ = r.reply.send(Ok(Answer::Motions(Vec::new())));
            }
        }
    }
    let mut stats = HubStats {
        rounds: 1,
        timed_out_rounds: u64::from(timed_out),
        ..Default::default()
    };
    if !configs.is_empty() {
        let (mut values, mut scene_of, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        for r in &configs {
            if let Work::Configs(v) = &r.work {
                let before = scene_of.len();
                values.extend_from_slice(v);
                // Rows: the client checked its batch against the group's dof.
                let rows = v.len() / shared.dof.max(1);
                scene_of.resize(before + rows, r.scene);
                counts.push(rows);
            }
        }
        stats.configs += scene_of.len() as u64;
        let result = exec.check_configs(&values, &scene_of);
        answer(configs, &counts, result, Answer::Configs);
        stats.batches += 1;
    }
    if !motions.is_empty() {
        let mut all = PreparedMotions::default();
        let (mut scene_of, mut counts) = (Vec::new(), Vec::new());
        for r in &motions {
            if let Work::Motions(p) = &r.work {
                all.start.extend_from_slice(&p.start);
                all.diff.extend_from_slice(&p.diff);
                all.segments.extend_from_slice(&p.segments);
                scene_of.resize(scene_of.len() + p.segments.len(), r.scene);
                counts.push(p.segments.len());
            }
        }
        stats.motions += scene_of.len() as u64;
        let result = exec.motion_statuses(&all, &scene_of);
        answer(motions, &counts, result, Answer::Motions);
        stats.batches += 1;
    }
    let mut s = lock(&shared.stats);
    s.rounds += stats.rounds;
    s.timed_out_rounds += stats.timed_out_rounds;
    s.configs += stats.configs;
    s.motions += stats.motions;
    s.batches += stats.batches;
    s.device_ms += exec.device_ms() - device_before;
}

/// Splits `result` (one entry per item, requests' items in order, `counts[k]` for request `k`)
/// among the requests and sends each its part; on an error every request gets it.
fn answer<T: Clone>(
    requests: Vec<Request>,
    counts: &[usize],
    result: Result<Vec<T>, CollisionError>,
    wrap: fn(Vec<T>) -> Answer,
) {
    match result {
        Ok(all) => {
            let mut at = 0;
            for (r, &n) in requests.into_iter().zip(counts) {
                let part = all.get(at..at + n).map(|p| p.to_vec());
                at += n;
                let msg = part.map(wrap).ok_or_else(|| CollisionError::Backend {
                    backend: "hub".into(),
                    message: "the executor returned fewer verdicts than items".into(),
                });
                let _ = r.reply.send(msg);
            }
        }
        Err(e) => {
            let message = e.to_string();
            for r in requests {
                let _ = r.reply.send(Err(CollisionError::Backend {
                    backend: "hub".into(),
                    message: message.clone(),
                }));
            }
        }
    }
}

/// A [`Checker`] for one scene of a [`LaunchHub`]: its requests wait for the hub's next round.
/// Dropping it tells the hub it will ask no more.
pub struct HubChecker {
    shared: Arc<Shared>,
    scene: u32,
    space: JointSpace,
}

impl std::fmt::Debug for HubChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubChecker")
            .field("scene", &self.scene)
            .finish()
    }
}

impl HubChecker {
    /// The scene this client checks in.
    pub fn scene(&self) -> usize {
        self.scene as usize
    }

    fn ask(&self, work: Work) -> Result<Answer, CollisionError> {
        let (tx, rx) = sync_channel(1);
        {
            let mut q = lock(&self.shared.queue);
            if q.shutdown {
                return Err(stopped());
            }
            q.pending.push(Request {
                scene: self.scene,
                work,
                reply: tx,
                since: Instant::now(),
            });
        }
        self.shared.wake.notify_all();
        let answer = rx.recv().map_err(|_| stopped())?;
        lock(&self.shared.stats).requests += 1;
        answer
    }

    /// Statuses of prepared motions in one round of the hub.
    fn statuses(&self, p: &PreparedMotions) -> Result<Vec<MotionStatus>, CollisionError> {
        match self.ask(Work::Motions(p.clone()))? {
            Answer::Motions(s) if s.len() == p.segments.len() => Ok(s),
            _ => Err(CollisionError::Backend {
                backend: "hub".into(),
                message: "wrong answer to a motion request".into(),
            }),
        }
    }
}

impl Drop for HubChecker {
    fn drop(&mut self) {
        let mut q = lock(&self.shared.queue);
        q.live = q.live.saturating_sub(1);
        drop(q);
        self.shared.wake.notify_all();
    }
}

impl Checker for HubChecker {
    fn space(&self) -> &JointSpace {
        &self.space
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        validate_batch(&self.space, configs)?;
        if configs.is_empty() {
            return Ok(Vec::new());
        }
        let values = configs.values().iter().map(|&v| v as f32).collect();
        match self.ask(Work::Configs(values))? {
            Answer::Configs(v) if v.len() == configs.len() => Ok(v),
            _ => Err(CollisionError::Backend {
                backend: "hub".into(),
                message: "wrong answer to a configuration request".into(),
            }),
        }
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        let p = prepare_motions(&self.space, motions, resolution)?;
        if p.segments.is_empty() {
            return Ok(Vec::new());
        }
        refine_motions_up_to(&p, max_refinements, |q| self.statuses(q))
    }

    fn backend(&self) -> Backend {
        self.shared.backend
    }
}

/// A [`BatchExecutor`] on the CPU: one [`CpuChecker`] per scene, each item through its scene's
/// reference tests ([`CpuChecker::config_valid_f32`], [`CpuChecker::motion_status`]). It gives
/// the verdicts of the CUDA executor without a GPU (tests and `gmp bench mbm --batched` on
/// the CPU backend).
pub struct CpuBatch {
    checkers: Vec<CpuChecker>,
    scratch: Scratch,
}

impl CpuBatch {
    /// An executor over the scenes of `checkers` (scene `k` is `checkers[k]`); they must share
    /// one planning group.
    pub fn new(checkers: Vec<CpuChecker>) -> Result<Self, CollisionError> {
        let dof = checkers.first().map(|c| c.model().dof());
        if checkers.iter().any(|c| Some(c.model().dof()) != dof) {
            return Err(CollisionError::Backend {
                backend: "hub".into(),
                message: "the scenes' checkers have different planning groups".into(),
            });
        }
        Ok(Self {
            checkers,
            scratch: Scratch::default(),
        })
    }

    /// The checker of `scene` and the scratch space.
    fn checker(&mut self, scene: u32) -> Result<(&CpuChecker, &mut Scratch), CollisionError> {
        match self.checkers.get(scene as usize) {
            Some(c) => Ok((c, &mut self.scratch)),
            None => Err(CollisionError::Backend {
                backend: "hub".into(),
                message: format!("scene {scene} out of range"),
            }),
        }
    }
}

impl BatchExecutor for CpuBatch {
    fn scenes(&self) -> usize {
        self.checkers.len()
    }

    fn check_configs(
        &mut self,
        values: &[f32],
        scene_of: &[u32],
    ) -> Result<Vec<bool>, CollisionError> {
        let dof = values.len().checked_div(scene_of.len()).unwrap_or(0);
        let mut out = Vec::with_capacity(scene_of.len());
        for (i, &s) in scene_of.iter().enumerate() {
            let (c, scratch) = self.checker(s)?;
            let q = values.get(i * dof..(i + 1) * dof).unwrap_or(&[]);
            out.push(c.config_valid_f32(q, scratch));
        }
        Ok(out)
    }

    fn motion_statuses(
        &mut self,
        p: &PreparedMotions,
        scene_of: &[u32],
    ) -> Result<Vec<MotionStatus>, CollisionError> {
        let mut out = Vec::with_capacity(scene_of.len());
        for (i, &s) in scene_of.iter().enumerate() {
            let (c, scratch) = self.checker(s)?;
            out.push(c.motion_status(p, i, scratch));
        }
        Ok(out)
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }
}
