//! The page's drawings as inline SVG, laid out on the server with fixed, deterministic rules
//! (no script, no layout engine): a session's thought tree and a deliberation's graph.
//!
//! The thought tree is the `visualize` tool's chart (`export::visualize::Chart`: lanes, where
//! each branch hangs, which thought a revision points at) drawn one column per lane and one row
//! per thought in recorded order, so nothing overlaps. The deliberation graph is layered by
//! node depth, nodes of a layer in the order they were added. Every label goes through maud's
//! escaping and loses control characters (which XML forbids even escaped), so the drawing is
//! well-formed XML whatever a caller wrote. Must not know: HTTP, who is looking.

use std::collections::HashMap;

use maud::{Markup, html};

use crate::export::single_line;
use crate::export::visualize::Chart;
use crate::projections::{Deliberation, DeliberationState, Session, Thought};

/// Most thoughts or nodes drawn; past this the drawing says how many were left out.
const MOST_DRAWN: usize = 400;

/// Most deliberation nodes drawn (every one is in the table).
const MOST_DRAWN_NODES: usize = 500;

/// Characters of text shown in a box.
const LABEL_CHARS: usize = 26;

const COLUMN: u32 = 230;
const ROW: u32 = 38;
const BOX_W: u32 = 200;
const BOX_H: u32 = 26;
const TOP: u32 = 34;
const LEFT: u32 = 20;

/// `text` on one line, cut to `chars` characters (with `…`), without anything XML cannot hold.
fn label(text: &str, chars: usize) -> String {
    let line: String = single_line(text)
        .chars()
        .filter(|c| !matches!(c, '\u{FFFE}' | '\u{FFFF}') && !c.is_control())
        .collect();
    let mut it = line.chars();
    let mut cut: String = it.by_ref().take(chars).collect();
    if it.next().is_some() {
        cut.push('…');
    }
    cut
}

/// `text` without the characters XML 1.0 forbids even escaped (controls other than tab and
/// line breaks, U+FFFE, U+FFFF), for the tooltips that keep a text whole.
fn xml_text(text: &str) -> String {
    text.chars()
        .filter(|c| matches!(c, '\t' | '\n' | '\r') || !(c.is_control() && u32::from(*c) < 0x20))
        .filter(|c| !matches!(c, '\u{FFFE}' | '\u{FFFF}'))
        .collect()
}

/// A thought's box label: `#N` and the start of its text (or that it was erased).
fn thought_label(t: &Thought) -> String {
    match t.text.as_deref() {
        Some(text) => format!("#{} {}", t.thought_number, label(text, LABEL_CHARS)),
        None => format!("#{} [erased]", t.thought_number),
    }
}

/// Arrowhead markers shared by both drawings.
fn markers() -> Markup {
    html! {
        defs {
            marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                path d="M 0 0 L 10 5 L 0 10 z" fill="#5a6170" {}
            }
            marker id="arrow-typed" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                path d="M 0 0 L 10 5 L 0 10 z" fill="#2f62c6" {}
            }
        }
    }
}

/// The thought tree of `session`.
pub(super) fn thought_tree(session: &Session) -> Markup {
    let chart = Chart::of(session);
    let drawn = session.thoughts.len().min(MOST_DRAWN);
    // Where each drawn thought sits: (lane, row = its index in recorded order).
    let mut place: HashMap<usize, (u32, u32)> = HashMap::new();
    for (lane_no, lane) in chart.lanes.iter().enumerate() {
        let column = u32::try_from(lane_no).unwrap_or(u32::MAX);
        for (index, _) in &lane.thoughts {
            if *index < drawn {
                place.insert(*index, (column, u32::try_from(*index).unwrap_or(u32::MAX)));
            }
        }
    }
    let at = |(column, row): (u32, u32)| (LEFT + column * COLUMN, TOP + row * ROW);
    let lanes = u32::try_from(chart.lanes.len()).unwrap_or(1).max(1);
    let width = LEFT * 2 + lanes * COLUMN;
    let height = TOP + u32::try_from(drawn).unwrap_or(0) * ROW + 20;
    html! {
        svg #thought-tree xmlns="http://www.w3.org/2000/svg" role="img" width=(width) height=(height)
            viewBox={ "0 0 " (width) " " (height) } font-family="sans-serif" font-size="12" {
            title { "Thought tree of session " (session.id) }
            (markers())
            @for (lane_no, lane) in chart.lanes.iter().enumerate() {
                @let x = LEFT + u32::try_from(lane_no).unwrap_or(0) * COLUMN;
                text.lane x=(x) y="18" font-weight="bold" {
                    @match lane.branch {
                        None => "main",
                        Some(branch) => { "branch " (label(&branch.id, 22)) },
                    }
                }
                // The lane's own line: each thought to the next.
                @for pair in lane.thoughts.windows(2) {
                    @if let (Some(&from), Some(&to)) = (place.get(&pair[0].0), place.get(&pair[1].0)) {
                        @let ((x1, y1), (x2, y2)) = (at(from), at(to));
                        line.chain x1=(x1 + BOX_W / 2) y1=(y1 + BOX_H) x2=(x2 + BOX_W / 2) y2=(y2) stroke="#5a6170" marker-end="url(#arrow)" {}
                    }
                }
                // A branch hangs from its branch point.
                @if let (Some(anchor), Some((first, _))) = (lane.anchor, lane.thoughts.first()) {
                    @if let (Some(&from), Some(&to)) = (place.get(&anchor), place.get(first)) {
                        @let ((x1, y1), (x2, y2)) = (at(from), at(to));
                        path.branch-point d={ "M " (x1 + BOX_W) " " (y1 + BOX_H / 2) " C " (x1 + BOX_W + 20) " " (y1 + BOX_H / 2) ", " (x2 - 20) " " (y2 + BOX_H / 2) ", " (x2) " " (y2 + BOX_H / 2) }
                            fill="none" stroke="#1f8a4c" stroke-width="1.5" marker-end="url(#arrow)" {}
                    }
                }
            }
            // Revisions point at what they revise.
            @for revision in &chart.revisions {
                @if let (Some(&from), Some(to)) = (place.get(&revision.index), revision.target.and_then(|t| place.get(&t))) {
                    @let ((x1, y1), (x2, y2)) = (at(from), at(*to));
                    path.revision d={ "M " (x1) " " (y1 + BOX_H / 2) " C " (x1.saturating_sub(18)) " " (y1 + BOX_H / 2) ", " (x2.saturating_sub(18)) " " (y2 + BOX_H / 2) ", " (x2) " " (y2 + BOX_H / 2) }
                        fill="none" stroke="#b26b00" stroke-dasharray="4 3" marker-end="url(#arrow)" {
                        title { "#" (revision.by.thought_number) " revises this thought" }
                    }
                }
            }
            @for (index, thought) in session.thoughts.iter().enumerate().take(drawn) {
                @if let Some(&spot) = place.get(&index) {
                    @let (x, y) = at(spot);
                    @let revision = thought.is_revision || thought.revises_thought.is_some();
                    @let fill = if thought.text.is_none() { "#eceef2" } else if revision { "#fff3d6" } else { "#e8f0fe" };
                    g.thought data-seq=(thought.seq) {
                        title {
                            "#" (thought.thought_number) " (seq " (thought.seq) "): "
                            @match thought.text.as_deref() { Some(text) => (xml_text(text)), None => "[text erased]" }
                        }
                        rect x=(x) y=(y) width=(BOX_W) height=(BOX_H) rx="4" fill=(fill) stroke="#8ea3c7" {}
                        text x=(x + 6) y=(y + 17) { (thought_label(thought)) }
                    }
                }
            }
            @if drawn < session.thoughts.len() {
                text x=(LEFT) y=(height - 6) { "… " (session.thoughts.len() - drawn) " later thought(s) not drawn; the table lists them all" }
            }
        }
    }
}

/// The graph of a deliberation: nodes layered by depth, parent links and typed edges.
pub(super) fn deliberation_graph(d: &Deliberation, texts: &DeliberationState) -> Markup {
    const GAP_X: u32 = 220;
    const GAP_Y: u32 = 90;
    /// How far below its ends a typed edge bows.
    const BOW: u32 = 34;
    /// Boxes side by side at most: a wider layer wraps onto further rows, so the drawing
    /// keeps the page's width at any number of nodes (the table below lists every node).
    const PER_ROW: u32 = 6;
    let nodes: Vec<_> = d.nodes.iter().take(MOST_DRAWN_NODES).collect();
    // Layer = depth; order within a layer = order added.
    let mut per_layer: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    let mut slots: HashMap<&str, (u32, u32)> = HashMap::new();
    for node in &nodes {
        let slot = per_layer.entry(node.depth).or_insert(0);
        slots.insert(node.node_id.as_str(), (*slot, node.depth));
        *slot += 1;
    }
    // Each layer starts on the row after the previous layer's last.
    let mut first_row: HashMap<u32, u32> = HashMap::new();
    let mut rows = 0u32;
    for (depth, count) in &per_layer {
        first_row.insert(*depth, rows);
        rows += count.div_ceil(PER_ROW);
    }
    let place: HashMap<&str, (u32, u32)> = slots
        .into_iter()
        .map(|(id, (slot, depth))| (id, (slot % PER_ROW, first_row[&depth] + slot / PER_ROW)))
        .collect();
    let at = |(column, row): (u32, u32)| (LEFT + column * GAP_X, TOP + row.saturating_mul(GAP_Y));
    let widest = per_layer
        .values()
        .copied()
        .max()
        .unwrap_or(1)
        .clamp(1, PER_ROW);
    let width = LEFT * 2 + widest * GAP_X;
    let height = TOP + rows.max(1).saturating_mul(GAP_Y) + BOW;
    html! {
        svg #deliberation-graph xmlns="http://www.w3.org/2000/svg" role="img" width="100%" style={ "max-width:" (width) "px" }
            viewBox={ "0 0 " (width) " " (height) } font-family="sans-serif" font-size="12" {
            title { "Deliberation graph " (d.deliberation_id) }
            (markers())
            @for node in &nodes {
                @for parent in &node.parent_ids {
                    @if let (Some(&from), Some(&to)) = (place.get(parent.as_str()), place.get(node.node_id.as_str())) {
                        @let ((x1, y1), (x2, y2)) = (at(from), at(to));
                        line.parent x1=(x1 + BOX_W / 2) y1=(y1 + BOX_H) x2=(x2 + BOX_W / 2) y2=(y2) stroke="#a3aab6" {}
                    }
                }
            }
            // Typed edges bow below their ends, so one between neighbours of a layer does not run
            // behind the boxes between them; the label sits at the curve's middle.
            @for edge in &d.edges {
                @if let (Some(&from), Some(&to)) = (place.get(edge.from.as_str()), place.get(edge.to.as_str())) {
                    @let ((x1, y1), (x2, y2)) = (at(from), at(to));
                    @let (sx, sy, ex, ey) = (x1 + BOX_W / 2, y1 + BOX_H, x2 + BOX_W / 2, y2 + BOX_H);
                    @let (cx, cy) = ((sx + ex) / 2, sy.max(ey) + BOW);
                    g.edge {
                        path d={ "M " (sx) " " (sy) " Q " (cx) " " (cy) " " (ex) " " (ey) }
                            fill="none" stroke="#2f62c6" stroke-width="1.5" marker-end="url(#arrow-typed)" {}
                        text x=((sx + 2 * cx + ex) / 4 + 4) y=((sy + 2 * cy + ey) / 4 + 4) fill="#2f62c6" { (label(&edge.edge_type, 20)) }
                    }
                }
            }
            @for node in &nodes {
                @if let Some(&spot) = place.get(node.node_id.as_str()) {
                    @let (x, y) = at(spot);
                    @let content = texts.text(&node.content);
                    g.node data-node=(label(&node.node_id, 60)) {
                        title {
                            (xml_text(&node.node_id)) " (" (xml_text(&node.kind)) ", branch " (xml_text(&node.branch_id)) "): "
                            @match content { Some(text) => (xml_text(text)), None => "[text erased]" }
                        }
                        rect x=(x) y=(y) width=(BOX_W) height=(BOX_H) rx="4"
                            fill=(if content.is_none() { "#eceef2" } else { "#eef7ee" })
                            stroke="#6f9a78" stroke-dasharray=(if node.pruned.is_some() { "4 3" } else { "none" }) {}
                        text x=(x + 6) y=(y + 17) {
                            (label(&node.node_id, 10)) " "
                            @match content { Some(text) => (label(text, 22)), None => "[erased]" }
                        }
                    }
                }
            }
            @if nodes.len() < d.nodes.len() {
                text x=(LEFT) y=(height - 4) { "… " (d.nodes.len() - nodes.len()) " more node(s) not drawn" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_session_draws_as_well_formed_xml_with_every_thought() {
        for (name, session) in crate::export::fixtures::all() {
            if session.thoughts.is_empty() {
                continue;
            }
            let svg = thought_tree(&session).into_string();
            let doc = roxmltree::Document::parse(&svg)
                .unwrap_or_else(|e| panic!("{name}: not well-formed ({e}): {svg}"));
            let boxes = doc
                .descendants()
                .filter(|n| n.attribute("class") == Some("thought"))
                .count();
            assert_eq!(boxes, session.thoughts.len().min(MOST_DRAWN), "{name}");
            assert!(!svg.contains("<script"), "{name}");
        }
    }

    #[test]
    fn labels_are_one_line_cut_and_without_controls() {
        assert_eq!(label("a\u{1}b\nc", 10), "a b c");
        assert_eq!(label("abcdef", 3), "abc…");
        assert_eq!(label("<script>", 20), "<script>");
        assert_eq!(xml_text("a\u{0}b\tc\nd\u{FFFF}"), "ab\tc\nd");
    }
}
