//! The ROS 2 node (`planner_node`), built on r2r. The only module that names r2r.
//!
//! The node is async: every subscription, service and the parameter event stream is a
//! futures `Stream` consumed by a task of its own, and a blocking task spins the rcl
//! node. SIGINT or SIGTERM stops the spin task, which drops the node; every stream then
//! ends and its task returns, and [`run`] joins them all before returning.
//!
//! Interfaces (names relative to the node, `~/` = `/planner_node/` by default):
//!
//! | kind         | name                | type                                   |
//! |--------------|---------------------|----------------------------------------|
//! | subscription | `joint_states`      | `sensor_msgs/JointState`               |
//! | service      | `~/plan`            | `gpu_motion_planner_interfaces/PlanPath` |
//! | service      | `~/clear_roadmap`   | `std_srvs/Trigger`                     |
//! | service      | `~/rebuild_roadmap` | `std_srvs/Trigger`                     |
//! | parameters   | see [`params::NodeParams`] and `config/planner.yaml`       |

pub mod params;
pub mod plan;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use r2r::gpu_motion_planner_interfaces::srv::PlanPath;
use r2r::sensor_msgs::msg::JointState;
use r2r::std_srvs::srv::Trigger;
use r2r::QosProfile;

pub use params::NodeParams;

/// Default node name (can be remapped with `--ros-args -r __node:=NAME`).
pub const NODE_NAME: &str = "planner_node";

/// How long one `spin_once` waits for work; bounds the shutdown latency.
const SPIN_PERIOD: Duration = Duration::from_millis(50);

/// How long shutdown waits for the stream tasks to notice that the node is gone.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Errors that stop the node from starting.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// rcl/r2r refused to create the context, node, a subscription or a service.
    #[error("ROS: {0}")]
    Ros(#[from] r2r::Error),
    /// The tokio runtime or the signal handlers could not be set up.
    #[error("runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// State shared between the node's tasks.
#[derive(Debug, Default)]
pub struct Shared {
    /// Validated parameters the node works from.
    pub params: Mutex<NodeParams>,
    /// Latest message received on `joint_states`.
    pub joint_state: Mutex<Option<JointState>>,
}

/// Locks a mutex, recovering the data if a task panicked while holding it (the data
/// here stays valid across a panic: every write is a single assignment).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the node until SIGINT/SIGTERM. Creates its own tokio runtime; ROS arguments
/// (`--ros-args ...`) are read from the process command line by rcl.
pub fn run() -> Result<(), NodeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run_async())
}

async fn run_async() -> Result<(), NodeError> {
    let ctx = r2r::Context::create()?;
    let mut node = r2r::Node::create(ctx, NODE_NAME, "")?;
    let logger = node.logger().to_owned();

    // Parameters: adopt overrides from the command line / params file, declare the rest.
    let shared = Arc::new(Shared::default());
    {
        let mut typed = lock(&shared.params);
        let mut map = lock(&node.params);
        for refused in typed.declare(&mut map) {
            r2r::log_warn!(&logger, "{refused}; using the default");
        }
        r2r::log_info!(&logger, "parameters: {:?}", *typed);
    }
    let (param_server, param_events) = node.make_parameter_handler()?;

    let joint_states = node.subscribe::<JointState>("joint_states", QosProfile::sensor_data())?;
    let plan_requests =
        node.create_service::<PlanPath::Service>("~/plan", QosProfile::services_default())?;
    let clear_requests =
        node.create_service::<Trigger::Service>("~/clear_roadmap", QosProfile::services_default())?;
    let rebuild_requests = node
        .create_service::<Trigger::Service>("~/rebuild_roadmap", QosProfile::services_default())?;
    let param_map = node.params.clone();

    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            while !stop.load(Ordering::Relaxed) {
                node.spin_once(SPIN_PERIOD);
            }
            // `node` drops here: its streams end and the tasks below return.
        })
    };

    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(param_server));

    // Parameter changes from `ros2 param set`: validate; refuse by restoring the old value.
    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let mut events = param_events;
        async move {
            while let Some((name, value)) = events.next().await {
                let mut typed = lock(&shared.params);
                if !NodeParams::NAMES.contains(&name.as_str()) {
                    r2r::log_info!(
                        &logger,
                        "parameter '{name}' set to {value:?} (not used by the node)"
                    );
                    continue;
                }
                match typed.set(&name, &value) {
                    Ok(()) => r2r::log_info!(&logger, "parameter '{name}' set to {value:?}"),
                    Err(e) => {
                        r2r::log_warn!(&logger, "{e}; keeping {:?}", typed.value(&name));
                        if let Some(p) = lock(&param_map).get_mut(&name) {
                            p.value = typed.value(&name);
                        }
                    }
                }
            }
        }
    }));

    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let mut joint_states = joint_states;
        async move {
            let mut first = true;
            while let Some(msg) = joint_states.next().await {
                if first {
                    r2r::log_info!(
                        &logger,
                        "first joint_states message: {} joints",
                        msg.name.len()
                    );
                    first = false;
                }
                *lock(&shared.joint_state) = Some(msg);
            }
        }
    }));

    tasks.push(tokio::spawn({
        let shared = shared.clone();
        let logger = logger.clone();
        let mut requests = plan_requests;
        async move {
            while let Some(req) = requests.next().await {
                let params = lock(&shared.params).clone();
                let current = lock(&shared.joint_state).clone();
                let response = plan::answer(&req.message, &params, current.as_ref());
                r2r::log_info!(
                    &logger,
                    "~/plan: success={} error_code={} message='{}'",
                    response.success,
                    response.error_code,
                    response.message
                );
                if let Err(e) = req.respond(response) {
                    r2r::log_error!(&logger, "~/plan: could not send the response: {e}");
                }
            }
        }
    }));

    tasks.push(tokio::spawn(trigger_server(
        clear_requests,
        logger.clone(),
        "~/clear_roadmap",
        || Trigger::Response {
            success: true,
            message: "no roadmap to clear (planner not wired yet)".into(),
        },
    )));
    tasks.push(tokio::spawn(trigger_server(
        rebuild_requests,
        logger.clone(),
        "~/rebuild_roadmap",
        || Trigger::Response {
            success: false,
            message: "planner not wired yet".into(),
        },
    )));

    r2r::log_info!(&logger, "{NODE_NAME} ready");
    let signal = wait_for_shutdown_signal().await;
    r2r::log_info!(&logger, "{signal}: shutting down");

    stop.store(true, Ordering::Relaxed);
    if let Err(e) = spinner.await {
        r2r::log_error!(&logger, "spin task failed: {e}");
    }
    for task in tasks {
        let abort = task.abort_handle();
        match tokio::time::timeout(SHUTDOWN_GRACE, task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_cancelled() => {}
            Ok(Err(e)) => r2r::log_error!(&logger, "task failed: {e}"),
            Err(_) => abort.abort(),
        }
    }
    r2r::log_info!(&logger, "stopped");
    Ok(())
}

/// Serves a `std_srvs/Trigger` service with a fixed answer.
async fn trigger_server<S, F>(mut requests: S, logger: String, name: &'static str, answer: F)
where
    S: futures::Stream<Item = r2r::ServiceRequest<Trigger::Service>> + Unpin,
    F: Fn() -> Trigger::Response,
{
    while let Some(req) = requests.next().await {
        let response = answer();
        r2r::log_info!(
            &logger,
            "{name}: success={} message='{}'",
            response.success,
            response.message
        );
        if let Err(e) = req.respond(response) {
            r2r::log_error!(&logger, "{name}: could not send the response: {e}");
        }
    }
}

/// Waits for SIGINT (Ctrl-C, `ros2 launch` shutdown) or SIGTERM and names it. If the
/// handlers cannot be installed, waits forever rather than exiting at once.
async fn wait_for_shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let term = async {
        match term.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => futures::future::pending::<()>().await,
        }
    };
    let int = async {
        if tokio::signal::ctrl_c().await.is_err() {
            futures::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = int => "SIGINT",
        _ = term => "SIGTERM",
    }
}
