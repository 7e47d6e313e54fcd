//! Lays a [`Chart`] out as ascii art: each lane is one line of `T<number>` nodes joined by
//! `───`; a node that branches gets `┬` (or `┐` at the end of its line) and its branches are
//! drawn below it, `├─`/`└─ [branch-id]` with the branch's own line indented under the name, the
//! rightmost fork first so vertical bars never cross. Branches of branches nest the same way, up
//! to [`MAX_NESTING`] levels; a branch with no anchor (or nested deeper) is drawn after the tree,
//! detached, under a line naming the thought it branched from. Then the revisions and a legend.
//!
//! Columns are counted in characters; text is flattened to one line, but wide characters
//! (CJK, emoji) take two terminal cells and push the bars below them out of line.
//!
//! Must not know: the other formats, MCP or the ledger.

use std::collections::HashMap;

use super::{Chart, Lane, VisualizeOptions, single_line};
use crate::projections::Thought;

/// How deep branches of branches nest before being drawn detached (bounds the recursion).
const MAX_NESTING: usize = 32;

pub(super) fn render(chart: &Chart<'_>, opts: &VisualizeOptions) -> String {
    let mut lines = vec![
        "Thinking Chain".to_owned(),
        "==============".to_owned(),
        String::new(),
    ];
    if chart.session.thoughts.is_empty() {
        lines.push("(no thoughts recorded)".to_owned());
    } else {
        let layout = Layout::new(chart, opts);
        lines.extend(layout.draw());
    }
    let revisions: Vec<String> = chart
        .revisions
        .iter()
        .map(|r| match r.by.revises_thought {
            Some(n) if r.target.is_some() => format!("  T{} revises T{n}", r.by.thought_number),
            Some(n) => format!("  T{} revises T{n} (not found)", r.by.thought_number),
            None => format!("  T{} is a revision", r.by.thought_number),
        })
        .collect();
    if !revisions.is_empty() {
        lines.push(String::new());
        lines.push("Revisions:".to_owned());
        lines.extend(revisions);
    }
    lines.push(String::new());
    let mut legend = "Legend: [branch-name] = branch, [CONCLUSION] = chain concluded, \
        [concluded] = branch concluded"
        .to_owned();
    if opts.show_tags {
        legend.push_str(", #tag = tag");
    }
    lines.push(legend);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Which lanes hang from which node, and which are drawn detached.
struct Layout<'c, 's> {
    chart: &'c Chart<'s>,
    opts: &'c VisualizeOptions,
    /// For each lane, for each of its nodes, the lanes hanging from it.
    children: Vec<Vec<Vec<usize>>>,
}

/// A line being drawn, one `char` per column.
type Row = Vec<char>;

impl<'c, 's> Layout<'c, 's> {
    fn new(chart: &'c Chart<'s>, opts: &'c VisualizeOptions) -> Self {
        let mut children: Vec<Vec<Vec<usize>>> = chart
            .lanes
            .iter()
            .map(|l| vec![Vec::new(); l.thoughts.len()])
            .collect();
        let mut spots: HashMap<usize, (usize, usize)> = HashMap::new();
        for (l, owner) in chart.lanes.iter().enumerate() {
            for (pos, (index, _)) in owner.thoughts.iter().enumerate() {
                spots.entry(*index).or_insert((l, pos));
            }
        }
        for (lane, hanging) in chart.lanes.iter().enumerate().skip(1) {
            let Some(&(l, pos)) = hanging.anchor.and_then(|a| spots.get(&a)) else {
                continue;
            };
            if l == lane {
                continue;
            }
            if let Some(slot) = children.get_mut(l).and_then(|nodes| nodes.get_mut(pos)) {
                slot.push(lane);
            }
        }
        Layout {
            chart,
            opts,
            children,
        }
    }

    /// The tree from the main thread, then every lane it did not reach, detached.
    fn draw(&self) -> Vec<String> {
        let mut drawn = vec![false; self.chart.lanes.len()];
        let mut rows = self.block(0, 0, &mut drawn);
        for lane in 1..self.chart.lanes.len() {
            if drawn.get(lane).copied().unwrap_or(true) {
                continue;
            }
            let Some(branch) = self.chart.lanes.get(lane).and_then(|l| l.branch) else {
                continue;
            };
            rows.push(Row::new());
            let from = format!(
                "[{}] branched from T{}",
                single_line(&branch.id),
                branch.from_thought
            );
            let note = if self
                .chart
                .lanes
                .get(lane)
                .is_some_and(|l| l.anchor.is_none())
            {
                " (not found)"
            } else {
                ""
            };
            rows.push(format!("{from}{note}").chars().collect());
            for row in self.block(lane, 0, &mut drawn) {
                let mut indented = Row::new();
                put(&mut indented, 5, &row);
                rows.push(indented);
            }
        }
        rows.into_iter()
            .map(|r| r.into_iter().collect::<String>().trim_end().to_owned())
            .collect()
    }

    /// One lane's line and, below it, everything hanging from it.
    fn block(&self, lane: usize, depth: usize, drawn: &mut [bool]) -> Vec<Row> {
        if let Some(flag) = drawn.get_mut(lane) {
            *flag = true;
        }
        let Some(this) = self.chart.lanes.get(lane) else {
            return Vec::new();
        };
        let mut forks: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut line = Row::new();
        let mut forking: Option<Vec<usize>> = None;
        for (pos, (_, thought)) in this.thoughts.iter().enumerate() {
            if pos > 0 {
                match forking.take() {
                    Some(kids) => {
                        forks.push((line.len() + 2, kids));
                        line.extend(" ─┬─ ".chars());
                    }
                    None => line.extend(" ─── ".chars()),
                }
            }
            line.extend(self.label(this, pos, thought).chars());
            if depth < MAX_NESTING {
                let kids = self.undrawn_children(lane, pos, drawn);
                forking = (!kids.is_empty()).then_some(kids);
            }
        }
        if let Some(kids) = forking {
            forks.push((line.len() + 2, kids));
            line.extend(" ─┐".chars());
        }
        if this.thoughts.is_empty() {
            line.extend("(no thoughts)".chars());
        }
        let mut rows = vec![line];
        let mut open: Vec<usize> = forks.iter().map(|(col, _)| *col).collect();
        for (col, kids) in forks.iter().rev() {
            open.pop();
            for (k, &kid) in kids.iter().enumerate() {
                let last = k + 1 == kids.len();
                let mut spacer = bars(&open);
                put(&mut spacer, *col, &['│']);
                rows.push(spacer);
                let mut head = bars(&open);
                let name = self
                    .chart
                    .lanes
                    .get(kid)
                    .and_then(|l| l.branch)
                    .map(|b| single_line(&b.id));
                let head_text = format!(
                    "{}─ [{}]",
                    if last { '└' } else { '├' },
                    name.unwrap_or_default()
                );
                put(&mut head, *col, &head_text.chars().collect::<Row>());
                rows.push(head);
                for sub in self.block(kid, depth + 1, drawn) {
                    let mut row = bars(&open);
                    if !last {
                        put(&mut row, *col, &['│']);
                    }
                    put(&mut row, col + 5, &sub);
                    rows.push(row);
                }
            }
        }
        rows
    }

    /// The lanes hanging from node `pos` of `lane` that are not drawn yet, marked drawn.
    fn undrawn_children(&self, lane: usize, pos: usize, drawn: &mut [bool]) -> Vec<usize> {
        let Some(kids) = self.children.get(lane).and_then(|l| l.get(pos)) else {
            return Vec::new();
        };
        kids.iter()
            .copied()
            .filter(|&kid| match drawn.get_mut(kid) {
                Some(flag) if !*flag => {
                    *flag = true;
                    true
                }
                _ => false,
            })
            .collect()
    }

    fn label(&self, lane: &Lane<'_>, pos: usize, thought: &Thought) -> String {
        let tail = lane.label_tail(pos, thought, self.opts);
        let mut label = format!("T{}", thought.thought_number);
        if let Some(content) = tail.content {
            label.push_str(&format!(" \"{content}\""));
        }
        for tag in tail.tags {
            label.push_str(&format!(" #{tag}"));
        }
        if let Some(marker) = tail.marker {
            label.push(' ');
            label.push_str(marker);
        }
        label
    }
}

/// A row with `│` at each of `cols`.
fn bars(cols: &[usize]) -> Row {
    let mut row = Row::new();
    for &col in cols {
        put(&mut row, col, &['│']);
    }
    row
}

/// Writes `text` into `row` from column `col`, padding with spaces.
fn put(row: &mut Row, col: usize, text: &[char]) {
    if row.len() < col {
        row.resize(col, ' ');
    }
    for (offset, &c) in text.iter().enumerate() {
        match row.get_mut(col + offset) {
            Some(cell) => *cell = c,
            None => row.push(c),
        }
    }
}
