//! The application's state as a snapshot: every projection, serialized as JSON, so that a
//! ledger opens by loading it and folding only the events recorded since (see
//! `ledger::snapshot`).
//!
//! [`STATE_VERSION`] names what these bytes mean. Change it whenever a projection's fields or
//! the way an event is folded change: a snapshot saved under another version is ignored, and
//! state is rebuilt from the log. The test `snapshot_state_version_is_bumped_with_its_sources`
//! guards it: it pins the version to a digest of the sources that define the state.

use serde::{Deserialize, Serialize};

use super::App;
use super::idempotency::IdempotencyIndex;
use crate::projections::{
    AgentState, CognitionState, DeliberationState, LuxState, MemoryState, Telemetry, ThinkingState,
};

/// The version of the snapshot state (see the module's documentation).
pub const STATE_VERSION: &str = "app-state/11";

#[derive(Serialize)]
struct Saved<'a> {
    thinking: &'a ThinkingState,
    deliberation: &'a DeliberationState,
    memory: &'a MemoryState,
    lux: &'a LuxState,
    agent: &'a AgentState,
    cognition: &'a CognitionState,
    telemetry: &'a Telemetry,
    idempotency: &'a IdempotencyIndex,
}

#[derive(Deserialize)]
struct Loaded {
    thinking: ThinkingState,
    deliberation: DeliberationState,
    memory: MemoryState,
    lux: LuxState,
    agent: AgentState,
    cognition: CognitionState,
    telemetry: Telemetry,
    idempotency: IdempotencyIndex,
}

impl App {
    pub(super) fn save_snapshot(&self) -> Result<Vec<u8>, String> {
        // The memory index on disk as current as the snapshot, so that an open from it
        // reopens the index instead of rebuilding it.
        self.memory_index.commit();
        serde_json::to_vec(&Saved {
            thinking: &self.state,
            deliberation: &self.deliberation,
            memory: &self.memory,
            lux: &self.lux,
            agent: &self.agent,
            cognition: &self.cognition,
            telemetry: &self.telemetry,
            idempotency: &self.idempotency,
        })
        .map_err(|e| format!("the state does not serialize: {e}"))
    }

    pub(super) fn load_snapshot(&mut self, bytes: &[u8]) -> Result<(), String> {
        let loaded: Loaded = serde_json::from_slice(bytes)
            .map_err(|e| format!("the snapshot's state does not parse: {e}"))?;
        // First, so that a snapshot this state cannot take changes nothing.
        self.state.adopt(loaded.thinking)?;
        self.deliberation = loaded.deliberation;
        // The memory index, built for the state replaced (if at all), is rebuilt or reopened
        // for this one when first lent: its anchor is not this state's.
        self.memory = loaded.memory;
        self.lux = loaded.lux;
        self.agent = loaded.agent;
        self.cognition = loaded.cognition;
        self.telemetry = std::sync::Arc::new(loaded.telemetry);
        self.idempotency = loaded.idempotency;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};

    /// [`super::STATE_VERSION`] and the digest of the sources that define the snapshot state
    /// when it was last set.
    const PINNED: (&str, &str) = (
        "app-state/11",
        "02f8b6d2a26412008187e332ec9ddeb359279e787c9214e41ef73f5addf45c47",
    );

    /// The files whose change may change what a snapshot means: the projections, the facts
    /// they fold (their directories' too), the idempotency index and this module.
    fn state_sources(root: &Path) -> Vec<PathBuf> {
        fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    rust_files(&path, files);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let mut files = Vec::new();
        for dir in ["src/projections", "src/events"] {
            rust_files(&root.join(dir), &mut files);
        }
        files.push(root.join("src/app/idempotency.rs"));
        files.push(root.join("src/app/snapshot.rs"));
        files.sort();
        files
    }

    #[test]
    fn snapshot_state_version_is_bumped_with_its_sources() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut hasher = Sha256::new();
        for path in state_sources(root) {
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("\r\n", "\n");
            // This file's own pin is not part of what it pins.
            let text = match text.find("#[cfg(test)]\nmod tests {") {
                Some(at) if path.ends_with("snapshot.rs") => text[..at].to_owned(),
                _ => text,
            };
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(text.as_bytes());
            hasher.update([0]);
        }
        let digest = crate::ledger::hash::hex(&hasher.finalize());
        assert!(
            digest == PINNED.1 && super::STATE_VERSION == PINNED.0,
            "the sources that define the snapshot state changed. If a projection's fields or \
             the way an event is folded changed, bump STATE_VERSION in src/app/snapshot.rs (old \
             snapshots are then ignored and state is rebuilt from the log). Then set PINNED to \
             (STATE_VERSION, \"{digest}\")."
        );
    }
}
