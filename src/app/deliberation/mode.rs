//! The thinking modes by name (`Auto`, `Quick`, `Explore`, `Map`, `Sketch`, `Test`) and the
//! internal method behind each; how a mode name is read. Running a mode is `modes/`.
//!
//! Must not know MCP or storage.

use crate::app::ErrorCode;
use crate::app::Rejection;
use crate::app::call::Refusal;

/// A thinking mode: its user-facing name and the internal method behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// `Auto`, `Quick`, `Explore`, `Map`, `Sketch` or `Test`.
    pub user_mode: &'static str,
    /// `cot`, `tot`, `got` or `reasonkit` (`Auto` routes before it runs: `auto`).
    pub internal_method: &'static str,
}

/// The modes, in catalog order.
pub const MODES: &[Mode] = &[
    Mode {
        user_mode: "Auto",
        internal_method: "auto",
    },
    Mode {
        user_mode: "Quick",
        internal_method: "cot",
    },
    Mode {
        user_mode: "Explore",
        internal_method: "tot",
    },
    Mode {
        user_mode: "Map",
        internal_method: "got",
    },
    Mode {
        user_mode: "Sketch",
        internal_method: "got",
    },
    Mode {
        user_mode: "Test",
        internal_method: "reasonkit",
    },
];

/// A mode by user-facing name or internal value, case-insensitive (`got` is Map).
pub fn parse_mode(raw: &str) -> Option<Mode> {
    let raw = raw.trim().to_ascii_lowercase();
    MODES
        .iter()
        .find(|m| m.user_mode.eq_ignore_ascii_case(&raw))
        .or_else(|| MODES.iter().find(|m| m.internal_method == raw))
        .copied()
}

/// Refuses an unknown mode name.
pub fn mode_or_refuse(raw: Option<&str>, default: &str) -> Result<Mode, Refusal> {
    let name = raw.unwrap_or(default);
    parse_mode(name).ok_or_else(|| {
        (
            Rejection::new(
                ErrorCode::InvalidMode,
                format!("\"{name}\" is not a thinking mode"),
                "use Auto, Quick, Explore, Map, Sketch or Test (or the internal values cot, tot, \
                 got, reasonkit); reasoning://thinking-modes describes each",
            ),
            None,
        )
    })
}
