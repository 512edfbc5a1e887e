# Sourced by scripts/test.sh and scripts/ci.sh: from here on, every cargo build of the workspace's
# own crates runs clippy's lints while it compiles them, and fails on any lint or warning, as
# `cargo clippy --workspace --all-targets -- -D warnings` would.
#
# How: cargo runs RUSTC_WORKSPACE_WRAPPER in place of rustc for workspace members only; clippy's
# driver is rustc with clippy's lint passes added, and writes the same artifacts; CLIPPY_ARGS
# carries the arguments `cargo clippy -- -D warnings` gives it. Dependencies build as usual and
# are shared with any other build of the same profile; cargo keeps the workspace crates built this
# way under a hash of their own.
#
# Why: a separate `cargo clippy` type-checks every dependency again (check mode shares nothing
# with a build): 270 to 430 s of compiling on the project's 2-core machine, for lints the build's
# own compile of the workspace crates can run.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
if [ ! -x "$clippy_driver" ]; then
  echo "$(basename "$0"): clippy-driver is missing from the toolchain: rustup component add clippy" >&2
  exit 1
fi
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
