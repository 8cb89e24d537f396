#!/usr/bin/env bash
# The README's "run" command: builds gmp and runs the main job on the bundled robot
# (urdf/gmp_arm.urdf) and scene (config/default_scene.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin gmp
./target/release/gmp demo "$@"
