//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The crate root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The MotionBenchMaker data folder, or `None` with a printed skip message.
pub fn mbm_or_skip(test: &str) -> Option<PathBuf> {
    match gpu_motion_planner::mbm::data_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("SKIP {test}: {e}");
            None
        }
    }
}
