//! Tags as every family records them: lowercased, trimmed, deduplicated, bounded.
//!
//! Shared by the thinking chain, `tag` and the deliberation's nodes. Must not know any family.

use super::Rejection;
use crate::app::ErrorCode;

/// Lowercased, trimmed, deduplicated tags, in first-seen order; refuses unusable ones.
pub(crate) fn normalize_tags(raw: &[String]) -> Result<Vec<String>, Rejection> {
    let mut tags: Vec<String> = Vec::new();
    for tag in raw {
        let tag = tag.trim().to_lowercase();
        if tag.is_empty() {
            continue;
        }
        if tag.chars().count() > 64 || tag.chars().any(char::is_control) {
            return Err(Rejection::new(
                ErrorCode::InvalidTag,
                "a tag must be at most 64 characters with no control characters",
                "use short labels such as hypothesis, evidence, counter, decision, question, \
                 rejected, key",
            ));
        }
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    if tags.len() > 32 {
        return Err(Rejection::new(
            ErrorCode::InvalidTag,
            "at most 32 tags per thought",
            "keep the few that matter",
        ));
    }
    Ok(tags)
}
