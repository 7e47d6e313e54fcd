//! Writes a [`Chart`] as a mermaid flowchart, in the shape of the plan's example: node
//! declarations, then edges (each lane in order, a branch's first thought linked from its
//! anchor), then one `subgraph` per branch listing its nodes, then `-.revises.->` edges.
//!
//! ```text
//! graph TD
//!     T1["#1"]
//!     T2["#2"]
//!
//!     T1 --> T2
//!
//!     subgraph B1 ["alt-approach"]
//!         T2
//!     end
//! ```
//!
//! It must parse for any session, so nothing user-written reaches the syntax unescaped:
//! - Node ids are `T<position>` (1-based index in the session's thoughts; thought numbers can
//!   repeat) and subgraph ids `B<n>` (n-th branch), so no id is a reserved word such as `end`;
//!   `T0` is the placeholder node of an empty session.
//! - Labels and subgraph titles are always quoted. This module's own label text (`#3`, `: `,
//!   ` #` before a tag, `[CONCLUSION]`) is written as is. User text is flattened to one line, and every
//!   character that is syntax somewhere in mermaid (quotes, brackets, `#`, `;`, `<`, `>`, `&`,
//!   `%`, `|`, `\`, backticks) is written as a mermaid entity code, `#<decimal>;`, which mermaid
//!   renders as the character. So are `ﬂ` and `¶`, which mermaid itself uses internally to
//!   carry entity codes, so that user text cannot forge one, and the first letter of the words
//!   `style` and `classDef`, which trigger a pre-parse rewrite in mermaid (see [`STYLE_WORDS`]).
//!
//! `check_grammar` (test-only) states the output's grammar line by line; tests hold every fixture to it
//! and tests/mermaid/validate.mjs runs mermaid's own parser over the same outputs.
//!
//! Must not know: the other formats, MCP or the ledger.

use super::{Chart, Lane, VisualizeOptions, single_line};
use crate::projections::Thought;

pub(super) fn render(chart: &Chart<'_>, opts: &VisualizeOptions) -> String {
    let mut sections: Vec<Vec<String>> = Vec::new();
    let mut nodes: Vec<(usize, String)> = Vec::new();
    let mut edges = Vec::new();
    let mut subgraphs = Vec::new();
    for (number, lane) in chart.lanes.iter().enumerate() {
        for (pos, (index, thought)) in lane.thoughts.iter().enumerate() {
            nodes.push((
                *index,
                format!(
                    "    {}[\"{}\"]",
                    node_id(*index),
                    label(lane, pos, thought, opts)
                ),
            ));
        }
        let mut previous = lane.anchor;
        for (index, _) in &lane.thoughts {
            if let Some(from) = previous {
                edges.push(format!("    {} --> {}", node_id(from), node_id(*index)));
            }
            previous = Some(*index);
        }
        if let Some(branch) = lane.branch
            && !lane.thoughts.is_empty()
        {
            subgraphs.push(format!(
                "    subgraph B{number} [\"{}\"]",
                title(&branch.id)
            ));
            subgraphs.extend(
                lane.thoughts
                    .iter()
                    .map(|(index, _)| format!("        {}", node_id(*index))),
            );
            subgraphs.push("    end".to_owned());
        }
    }
    nodes.sort_by_key(|(index, _)| *index);
    let mut nodes: Vec<String> = nodes.into_iter().map(|(_, line)| line).collect();
    if nodes.is_empty() {
        nodes.push("    T0[\"no thoughts recorded\"]".to_owned());
    }
    let revisions = chart
        .revisions
        .iter()
        .filter_map(|r| {
            Some(format!(
                "    {} -.revises.-> {}",
                node_id(r.index),
                node_id(r.target?)
            ))
        })
        .collect();
    sections.extend([nodes, edges, subgraphs, revisions]);
    let mut out = "graph TD\n".to_owned();
    let body: Vec<String> = sections
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.join("\n"))
        .collect();
    out.push_str(&body.join("\n\n"));
    out.push('\n');
    out
}

fn node_id(index: usize) -> String {
    format!("T{}", index.saturating_add(1))
}

/// `#N`, then `: preview`, ` #tag`s and the marker; only the user's text needs escaping, as
/// this module's own `#` is never followed by a raw `;` and so never starts an entity code.
fn label(lane: &Lane<'_>, pos: usize, thought: &Thought, opts: &VisualizeOptions) -> String {
    let tail = lane.label_tail(pos, thought, opts);
    let mut text = format!("#{}", thought.thought_number);
    if let Some(content) = tail.content.filter(|c| !c.is_empty()) {
        text.push_str(": ");
        text.push_str(&escape(&content));
    }
    for tag in tail.tags {
        text.push_str(" #");
        text.push_str(&escape(&tag));
    }
    if let Some(marker) = tail.marker {
        text.push(' ');
        text.push_str(marker);
    }
    text
}

/// A branch id as a subgraph title; mermaid rejects an empty string, so a blank id becomes a
/// no-break space.
fn title(id: &str) -> String {
    let title = escape(&single_line(id));
    if title.is_empty() {
        "#160;".to_owned()
    } else {
        title
    }
}

/// Text safe inside a quoted mermaid label (see the module docs).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        let rest = text.get(at..).unwrap_or_default();
        match c {
            '"' | '#' | ';' | '<' | '>' | '&' | '%' | '|' | '\\' | '`' | '[' | ']' | '(' | ')'
            | '{' | '}' | 'ﬂ' | '¶' => out.push_str(&format!("#{};", u32::from(c))),
            _ if STYLE_WORDS.iter().any(|w| rest.starts_with(w)) => {
                out.push_str(&format!("#{};", u32::from(c)))
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Before parsing, mermaid drops the last `;` of any line matching `style.*:\S*#.*;` or
/// `classDef.*:\S*#.*;` (its inline style syntax), which would cut an entity code short; a label
/// never contains these words literally, their first letter is an entity code instead.
const STYLE_WORDS: [&str; 2] = ["style", "classDef"];

/// Checks every line of a rendered flowchart against the grammar this module writes; returns
/// the first offending line.
#[cfg(test)]
pub(super) fn check_grammar(text: &str) -> Result<(), String> {
    use regex::Regex;
    const ID: &str = "([A-Za-z][A-Za-z0-9_]*)";
    // Not empty; `;` only closes an entity code; brackets only in this module's own markers.
    const LABEL: &str =
        r##""(?:[^"#;<>&%|\\`\[\](){}ﬂ¶\x00-\x1f\x7f]|#[0-9]+;|#|\[CONCLUSION\]|\[concluded\])+""##;
    const RESERVED: &[&str] = &[
        "end",
        "graph",
        "flowchart",
        "subgraph",
        "direction",
        "style",
        "class",
        "classDef",
        "click",
        "call",
        "href",
        "linkStyle",
        "default",
        "interpolate",
        "TB",
        "TD",
        "BT",
        "LR",
        "RL",
    ];
    let patterns = [
        "^graph TD$".to_owned(),
        "^$".to_owned(),
        format!(r"^    {ID}\[{LABEL}\]$"),
        format!("^    {ID} --> {ID}$"),
        format!(r"^    {ID} -\.revises\.-> {ID}$"),
        format!(r"^    subgraph {ID} \[{LABEL}\]$"),
        format!("^        {ID}$"),
        "^    end$".to_owned(),
    ];
    let grammar: Vec<Regex> = patterns
        .iter()
        .map(|p| Regex::new(p).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if !text.starts_with("graph TD\n") || !text.ends_with('\n') {
        return Err("must start with `graph TD` and end with a newline".to_owned());
    }
    for line in text.lines() {
        if STYLE_WORDS.iter().any(|w| line.contains(w)) {
            return Err(format!("style syntax in a line: {line:?}"));
        }
        let Some(caps) = grammar.iter().find_map(|re| re.captures(line)) else {
            return Err(format!("line outside the grammar: {line:?}"));
        };
        for id in caps.iter().skip(1).flatten() {
            if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(id.as_str())) {
                return Err(format!("reserved word used as an id: {line:?}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_turns_syntax_into_entity_codes() {
        assert_eq!(escape(r#"a "b" [c]; end"#), "a #34;b#34; #91;c#93;#59; end");
        assert_eq!(
            escape("<br>&#quot;%%`|\\"),
            "#60;br#62;#38;#35;quot#59;#37;#37;#96;#124;#92;"
        );
        assert_eq!(escape("ﬂ°°60¶ß ветка"), "#64258;°°60#182;ß ветка");
        assert_eq!(escape("sstyle: classDef"), "s#115;tyle: #99;lassDef");
    }

    #[test]
    fn the_grammar_rejects_what_would_break_mermaid() {
        assert!(check_grammar("graph TD\n    T1[\"#1\"]\n").is_ok());
        for bad in [
            "graph TD\n    T1[\"a\"b\"]\n",
            "graph TD\n    end[\"#1\"]\n",
            "graph TD\n    subgraph alt approach\n    end\n",
            "graph TD\n    T1[\"#1 #quot;\"]\n",
            "graph TD\n    T1[\"#1 a;b\"]\n",
            "graph TD\n    T1[\"#1 [x]\"]\n",
            "graph TD\n    T1[\"#1: style:#35;red#59;\"]\n",
            "graph TD\n    subgraph B1 [\"\"]\n    end\n",
            "graph TD\n    T1 --> T2;\n",
            "graph TD\n    T1[\"#1\"]",
        ] {
            assert!(check_grammar(bad).is_err(), "accepted {bad:?}");
        }
    }
}
