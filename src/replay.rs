//! Replays RMM allocation logs (see `src/bin/rmm-replay.rs`).
