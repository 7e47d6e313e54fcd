//! The MAXential Thinking v2.2 tools over a session: `search`, `tag`, `export`, `visualize`
//! (`reset` lives with the chain it closes, in `thinking`).

use regex::RegexBuilder;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::{ArgsShape, Decide, Target, ToolSpec, parse, read_target, target};
use super::tags::normalize_tags;
use super::{App, Command, Decided, Outcome, Rejection, lenient};
use crate::app::ErrorCode;
use crate::events::{Fact, SessionId};
use crate::export::{self, ExportOptions, VisualizeOptions};

/// The name of the `search` tool: its spec, its catalog entry and every reference use this.
pub const SEARCH_TOOL: &str = "search";
/// The name of the `tag` tool: its spec, its catalog entry and every reference use this.
pub const TAG_TOOL: &str = "tag";
/// The name of the `export` tool: its spec, its catalog entry and every reference use this.
pub const EXPORT_TOOL: &str = "export";
/// The name of the `visualize` tool: its spec, its catalog entry and every reference use this.
pub const VISUALIZE_TOOL: &str = "visualize";

/// The tools of the maxential family.
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: SEARCH_TOOL,
        args: ArgsShape::of::<SearchArgs>,
        decide: Decide::Pure(decide_search),
    },
    ToolSpec {
        name: TAG_TOOL,
        args: ArgsShape::of::<TagArgs>,
        decide: Decide::Pure(decide_tag),
    },
    ToolSpec {
        name: EXPORT_TOOL,
        args: ArgsShape::of::<ExportArgs>,
        decide: Decide::Pure(decide_export),
    },
    ToolSpec {
        name: VISUALIZE_TOOL,
        args: ArgsShape::of::<VisualizeArgs>,
        decide: Decide::Pure(decide_visualize),
    },
];

/// Arguments of `search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// Text to look for in thoughts: case-insensitive, a regular expression.
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub query: Option<String>,
    /// Only thoughts carrying all of these tags.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub tags: Option<Vec<String>>,
    /// Only thoughts of this branch.
    #[serde(default)]
    #[schemars(with = "String")]
    pub branch_id: Option<String>,
    /// Include revision thoughts (default true).
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub include_revisions: Option<bool>,
    /// Session handle (`sessionId` of an earlier response); omit to search your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// One search hit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMatch {
    pub thought_number: u32,
    /// The thought's text (null if it was erased).
    pub thought: Option<String>,
    /// The branch, or null for the main thread.
    pub branch_id: Option<String>,
    pub tags: Vec<String>,
    pub is_revision: bool,
    /// Seq of the event that recorded the thought.
    pub seq: u64,
}

/// Response of `search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchOutput {
    pub matches: Vec<SearchMatch>,
    pub total_matches: usize,
    /// Thoughts examined after the branch and revision filters.
    pub searched_thoughts: usize,
    /// The session read; null when this connection has not started one yet (a read starts
    /// nothing).
    pub session_id: Option<String>,
}

/// Arguments of `tag`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagArgs {
    /// The thought to tag (the latest thought with this number).
    #[serde(deserialize_with = "lenient::u32_required")]
    #[schemars(with = "u32", range(min = 1))]
    pub thought_number: u32,
    /// Tags to add.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub add: Option<Vec<String>>,
    /// Tags to remove.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub remove: Option<Vec<String>>,
    /// Session handle (`sessionId` of an earlier response); omit for your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `tag`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagOutput {
    pub thought_number: u32,
    /// The thought's tags after the change.
    pub tags: Vec<String>,
    /// Tags that were not there before.
    pub added: Vec<String>,
    /// Tags that were there and are gone.
    pub removed: Vec<String>,
    pub session_id: String,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    #[default]
    Markdown,
    Json,
}

/// Arguments of `export`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportArgs {
    /// Output format (default markdown).
    #[serde(default)]
    pub format: ExportFormat,
    /// Include branch thoughts (default true).
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub include_branches: Option<bool>,
    /// Export only this branch.
    #[serde(default)]
    #[schemars(with = "String")]
    pub branch_id: Option<String>,
    /// Session handle (`sessionId` of an earlier response); omit to export your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `export`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportOutput {
    /// `markdown` or `json`.
    pub format: String,
    /// The exported chain: markdown text, or (format `json`) the chain as an object.
    pub content: ExportContent,
    pub thought_count: usize,
    /// The session read; null when this connection has not started one yet (a read starts
    /// nothing).
    pub session_id: Option<String>,
}

/// What `export` returns: a markdown text, or the chain itself (not a JSON text to parse again).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ExportContent {
    Markdown(String),
    Json(serde_json::Map<String, Value>),
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VisualizeFormat {
    Ascii,
    #[default]
    Mermaid,
}

/// Arguments of `visualize`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisualizeArgs {
    /// Output format (default mermaid).
    #[serde(default)]
    pub format: VisualizeFormat,
    /// Show tags (default false).
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub show_tags: Option<bool>,
    /// Show the first 30 characters of each thought (default false).
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "bool")]
    pub show_content: Option<bool>,
    /// Session handle (`sessionId` of an earlier response); omit to draw your current session.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `visualize`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VisualizeOutput {
    /// `ascii` or `mermaid`.
    pub format: String,
    pub diagram: String,
    pub thought_count: usize,
    /// The session read; null when this connection has not started one yet (a read starts
    /// nothing).
    pub session_id: Option<String>,
}

/// Longest regular expression accepted, and the compiled-size cap that keeps a hostile pattern
/// from exhausting memory.
const MAX_QUERY_CHARS: usize = 1024;
const REGEX_SIZE_LIMIT: usize = 1 << 20;

pub(super) fn decide_search(
    app: &App,
    command: &Command,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: SearchArgs = parse(
        args,
        "all optional: query (regex), tags (array), branchId, includeRevisions, sessionId",
    )
    .map_err(|r| (r, None))?;
    let target = read_target(app, command, args.session_id.as_deref())?;
    let attributed = |r: Rejection| (r, target.existing_id());
    let regex = match args.query.as_deref().filter(|q| !q.is_empty()) {
        None => None,
        Some(q) if q.chars().count() > MAX_QUERY_CHARS => {
            return Err(attributed(Rejection::new(
                ErrorCode::InvalidQuery,
                format!("query is over {MAX_QUERY_CHARS} characters"),
                "search for a shorter pattern",
            )));
        }
        Some(q) => Some(
            RegexBuilder::new(q)
                .case_insensitive(true)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    attributed(Rejection::new(
                        ErrorCode::InvalidQuery,
                        format!("query is not a valid regular expression: {e}"),
                        "escape special characters such as ( ) [ ] . * + ? with a backslash to \
                         search for them literally",
                    ))
                })?,
        ),
    };
    let wanted_tags = normalize_tags(args.tags.as_deref().unwrap_or(&[])).map_err(attributed)?;
    let include_revisions = args.include_revisions.unwrap_or(true);
    let session = target.view()?;
    let mut searched = 0;
    let mut matches = Vec::new();
    for thought in &session.thoughts {
        if args
            .branch_id
            .as_deref()
            .is_some_and(|b| thought.branch_id.as_deref() != Some(b))
        {
            continue;
        }
        if !include_revisions && thought.is_revision {
            continue;
        }
        searched += 1;
        if !wanted_tags.iter().all(|t| thought.tags.contains(t)) {
            continue;
        }
        if let Some(regex) = &regex
            && !thought
                .text
                .as_deref()
                .is_some_and(|text| regex.is_match(text))
        {
            continue;
        }
        matches.push(SearchMatch {
            thought_number: thought.thought_number,
            thought: thought.text.as_deref().map(str::to_owned),
            branch_id: thought.branch_id.clone(),
            tags: thought.tags.clone(),
            is_revision: thought.is_revision,
            seq: thought.seq,
        });
    }
    let output = SearchOutput {
        total_matches: matches.len(),
        matches,
        searched_thoughts: searched,
        session_id: target.existing_id().map(|id| id.to_string()),
    };
    Ok(Decided::new(
        recorded_in(app, command, &target),
        Vec::new(),
        output,
    ))
}

pub(super) fn decide_tag(app: &App, command: &Command, args: &Value, _recorded: &Value) -> Outcome {
    let args: TagArgs = parse(
        args,
        "required: thoughtNumber (integer ≥ 1); optional: add, remove (arrays of tags), sessionId",
    )
    .map_err(|r| (r, None))?;
    let target = target(app, command, args.session_id.as_deref())?;
    let session_id = target.id();
    let attributed = |r: Rejection| (r, Some(session_id.clone()));
    let session = match &target {
        Target::Existing(s) => s.body()?,
        Target::New(_) => {
            return Err((
                Rejection::new(
                    ErrorCode::UnknownThought,
                    format!(
                        "thought {} does not exist: this connection has no thoughts yet",
                        args.thought_number
                    ),
                    "record thoughts with sequentialthinking first, or pass the sessionId of an \
                     earlier session",
                ),
                None,
            ));
        }
    };
    let Some(thought) = session.thought_by_number(args.thought_number) else {
        return Err(attributed(Rejection::new(
            ErrorCode::UnknownThought,
            format!("this session has no thought {}", args.thought_number),
            format!(
                "tag one of the thoughts 1..{} recorded so far (search lists them)",
                session.thoughts.len()
            ),
        )));
    };
    let add = normalize_tags(args.add.as_deref().unwrap_or(&[])).map_err(attributed)?;
    let remove = normalize_tags(args.remove.as_deref().unwrap_or(&[])).map_err(attributed)?;
    let removed: Vec<String> = remove
        .iter()
        .filter(|t| thought.tags.contains(t))
        .cloned()
        .collect();
    let mut tags: Vec<String> = thought
        .tags
        .iter()
        .filter(|t| !removed.contains(t))
        .cloned()
        .collect();
    let mut added = Vec::new();
    for tag in add {
        if !tags.contains(&tag) {
            tags.push(tag.clone());
            // A tag removed and re-added in one call ends up present and is reported as both.
            if !thought.tags.contains(&tag) || removed.contains(&tag) {
                added.push(tag);
            }
        }
    }
    if tags.len() > 32 {
        return Err(attributed(Rejection::new(
            ErrorCode::InvalidTag,
            "at most 32 tags per thought",
            "remove some first",
        )));
    }
    let facts = if added.is_empty() && removed.is_empty() {
        Vec::new()
    } else {
        vec![Fact::ThoughtTagged {
            session_id: session_id.clone(),
            thought_seq: thought.seq,
            added: added.clone(),
            removed: removed.clone(),
        }]
    };
    let output = TagOutput {
        thought_number: args.thought_number,
        tags,
        added,
        removed,
        session_id: session_id.to_string(),
    };
    Ok(Decided::new(Some(session_id), facts, output))
}

pub(super) fn decide_export(
    app: &App,
    command: &Command,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: ExportArgs = parse(
        args,
        "all optional: format (markdown | json), includeBranches, branchId, sessionId",
    )
    .map_err(|r| (r, None))?;
    let target = read_target(app, command, args.session_id.as_deref())?;
    let session = target.view()?;
    if let Some(branch) = &args.branch_id
        && !session.branches.iter().any(|b| &b.id == branch)
    {
        let known = session.branch_ids();
        return Err((
            Rejection::new(
                ErrorCode::UnknownBranch,
                format!("this session has no branch \"{branch}\""),
                if known.is_empty() {
                    "this session has no branches; omit branchId to export the main thread"
                        .to_owned()
                } else {
                    format!("export one of: {}", known.join(", "))
                },
            ),
            target.existing_id(),
        ));
    }
    let options = ExportOptions {
        include_branches: args.include_branches.unwrap_or(true),
        branch_id: args.branch_id,
    };
    let (format, content) = match args.format {
        ExportFormat::Markdown => (
            "markdown",
            ExportContent::Markdown(export::markdown::render(&session, &options)),
        ),
        ExportFormat::Json => match export::json::render(&session, &options) {
            Value::Object(chain) => ("json", ExportContent::Json(chain)),
            other => ("json", ExportContent::Markdown(other.to_string())),
        },
    };
    let output = ExportOutput {
        format: format.to_owned(),
        content,
        thought_count: session.thoughts.len(),
        session_id: target.existing_id().map(|id| id.to_string()),
    };
    Ok(Decided::new(
        recorded_in(app, command, &target),
        Vec::new(),
        output,
    ))
}

pub(super) fn decide_visualize(
    app: &App,
    command: &Command,
    args: &Value,
    _recorded: &Value,
) -> Outcome {
    let args: VisualizeArgs = parse(
        args,
        "all optional: format (ascii | mermaid), showTags, showContent, sessionId",
    )
    .map_err(|r| (r, None))?;
    let target = read_target(app, command, args.session_id.as_deref())?;
    let session = target.view()?;
    let options = VisualizeOptions {
        show_tags: args.show_tags.unwrap_or(false),
        show_content: args.show_content.unwrap_or(false),
    };
    let (format, diagram) = match args.format {
        VisualizeFormat::Ascii => ("ascii", export::visualize::ascii(&session, &options)),
        VisualizeFormat::Mermaid => ("mermaid", export::visualize::mermaid(&session, &options)),
    };
    let output = VisualizeOutput {
        format: format.to_owned(),
        diagram,
        thought_count: session.thoughts.len(),
        session_id: target.existing_id().map(|id| id.to_string()),
    };
    Ok(Decided::new(
        recorded_in(app, command, &target),
        Vec::new(),
        output,
    ))
}

/// Where a read of `target` is recorded: the session read when its caller owns it, else the
/// caller's own (an auditor's reads are not filed among the reviewed principal's calls).
fn recorded_in(app: &App, command: &Command, target: &Target<'_>) -> Option<SessionId> {
    target
        .existing_id()
        .map(|id| crate::app::call::reader_session(app, command, &id))
}
