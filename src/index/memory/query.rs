//! The full-text query language of the memory tools, parsed into a [`Node`] tree: words,
//! `"phrases"`, `AND`, `OR`, `NOT`, `+word`, `-word` and parentheses, with the usual
//! precedence, and the problems found in malformed text.
//!
//! Precedence, tightest first: `NOT`, `-` and `+` (prefixes of the next word, phrase or
//! group); then `AND`; then juxtaposition (words side by side, read as tantivy's and Lucene's
//! query parsers read them: each may match, a `+` one must, a `-` or `NOT` one must not); then
//! `OR`. So `a b AND c` is `a OR (b AND c)` and `a AND b OR c` is `(a AND b) OR c`. `NOT x`
//! means every memory of the owner but those matching `x`, wherever it stands: `a AND NOT b`
//! is `a` without `b`, `a OR NOT b` is `a` together with everything that lacks `b`, and `NOT
//! b` alone is every memory but `b`'s. Operators are the upper-case words only; `and`, `or`
//! and `not` are words like any other ("could not sleep"). A word may name a field:
//! `content:`, `keywords:` or `sector:` (the sector exactly as stored).
//!
//! Malformed text is read leniently, and what was repaired is reported as a [`Problem`]: an
//! unclosed `(` is closed at the end of the text, a `)` without its `(` is dropped, an
//! unclosed `"` runs to the end of the text, an operator or prefix with nothing to apply to is
//! dropped, and an empty `()` or `""` is dropped. Groups nest at most [`MAX_DEPTH`] deep
//! (deeper parentheses are dropped, and reported). The repaired query, written back in this
//! syntax by [`Node`]'s `Display`, parses to itself without problems.
//!
//! Pure: text in, tree out. Must not know tantivy, analysis or the index.

use std::fmt;

/// How deep parentheses may nest; deeper ones are dropped (a problem), so neither parsing nor
/// building the query can exhaust the stack.
pub(super) const MAX_DEPTH: usize = 32;

/// A field a word may name (`keywords:dark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldName {
    Content,
    Keywords,
    /// Matched exactly as stored, not analyzed.
    Sector,
}

impl FieldName {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "content" => Some(Self::Content),
            "keywords" => Some(Self::Keywords),
            "sector" => Some(Self::Sector),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Content => "content",
            Self::Keywords => "keywords",
            Self::Sector => "sector",
        }
    }
}

/// A word or a phrase, in the content and keywords unless it names a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Leaf {
    pub(super) field: Option<FieldName>,
    pub(super) text: String,
    /// Written in quotes: its words must be adjacent, in order. (A bare word the analyzer
    /// splits, `dark-mode`, is matched as a phrase too.)
    pub(super) quoted: bool,
}

/// What a clause among juxtaposed ones requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sign {
    /// No prefix: may match (at least one such clause must when no clause is `+`).
    Plain,
    /// `+`: must match.
    Required,
    /// `-` or `NOT`: must not match.
    Negated,
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Node {
    Leaf(Leaf),
    /// Juxtaposed clauses, each with its sign (at least two, or one that is not plain).
    Group(Vec<(Sign, Node)>),
    /// `AND`: every operand, a `true` one negated (at least two).
    And(Vec<(bool, Node)>),
    /// `OR`: any operand (at least two).
    Or(Vec<Node>),
}

/// Something malformed in a query, and what the lenient reading did about it. Positions are
/// 1-based character positions in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Problem {
    /// A `(` never closed: closed at the end.
    UnclosedParenthesis { at: usize },
    /// A `)` without its `(`: dropped.
    UnopenedParenthesis { at: usize },
    /// A `"` never closed: the phrase runs to the end.
    UnclosedQuote { at: usize },
    /// `AND`, `OR`, `NOT`, `+` or `-` with nothing to apply to: dropped.
    DanglingOperator { operator: &'static str, at: usize },
    /// `()` or `""` with nothing in it: dropped.
    Empty { what: &'static str, at: usize },
    /// A `(` more than [`MAX_DEPTH`] deep: dropped, with its `)`.
    TooDeep { at: usize },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnclosedParenthesis { at } => {
                write!(f, "the '(' at character {at} is never closed")
            }
            Self::UnopenedParenthesis { at } => {
                write!(f, "the ')' at character {at} closes nothing")
            }
            Self::UnclosedQuote { at } => write!(f, "the '\"' at character {at} is never closed"),
            Self::DanglingOperator { operator, at } => {
                write!(f, "'{operator}' at character {at} has nothing to apply to")
            }
            Self::Empty { what, at } => write!(f, "the {what} at character {at} is empty"),
            Self::TooDeep { at } => write!(
                f,
                "the '(' at character {at} nests deeper than {MAX_DEPTH} groups"
            ),
        }
    }
}

/// A query read leniently: the tree (`None` when nothing searchable is left) and what had to
/// be repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Parsed {
    pub(super) node: Option<Node>,
    pub(super) problems: Vec<Problem>,
}

/// Parses `text` (see the module doc).
pub(super) fn parse(text: &str) -> Parsed {
    let mut problems = Vec::new();
    let tokens = lex(text, &mut problems);
    let tokens = flatten_too_deep(tokens, &mut problems);
    let mut parser = Parser {
        tokens,
        at: 0,
        problems,
    };
    let node = parser.or_expr();
    // `or_expr` stops only at the end or at a `)` it may close; at the top level a `)` closes
    // nothing, and what follows it is read on.
    let mut node = node;
    while parser.at < parser.tokens.len() {
        let at = parser.tokens[parser.at].at;
        parser.problems.push(Problem::UnopenedParenthesis { at });
        parser.at += 1;
        let more = parser.or_expr();
        node = match (node, more) {
            (Some(a), Some(b)) => Some(juxtapose(a, b)),
            (a, b) => a.or(b),
        };
    }
    Parsed {
        node,
        problems: parser.problems,
    }
}

/// `a` and `b` side by side, as if written with a space between them.
fn juxtapose(a: Node, b: Node) -> Node {
    let mut items = match a {
        Node::Group(items) => items,
        other => vec![(Sign::Plain, other)],
    };
    match b {
        Node::Group(more) => items.extend(more),
        other => items.push((Sign::Plain, other)),
    }
    Node::Group(items)
}

/// The tokens without the parentheses nested deeper than [`MAX_DEPTH`] (and the `)` closing
/// each), each reported.
fn flatten_too_deep(tokens: Vec<Token>, problems: &mut Vec<Problem>) -> Vec<Token> {
    // For each open parenthesis, whether it was dropped.
    let mut open: Vec<bool> = Vec::new();
    let mut kept = Vec::with_capacity(tokens.len());
    for t in tokens {
        match t.kind {
            Kind::Open => {
                let deep = open.len() >= MAX_DEPTH;
                open.push(deep);
                if deep {
                    problems.push(Problem::TooDeep { at: t.at });
                    continue;
                }
            }
            Kind::Close if open.pop() == Some(true) => continue,
            _ => {}
        }
        kept.push(t);
    }
    kept
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Word(String),
    /// A phrase's text.
    Phrase(String),
    /// `name:` before a word or phrase.
    Field(FieldName),
    And,
    Or,
    Not,
    Plus,
    Minus,
    Open,
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    kind: Kind,
    /// 1-based character position.
    at: usize,
    /// For a phrase: whether it was closed.
    closed: bool,
}

fn lex(text: &str, problems: &mut Vec<Problem>) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        let token = |kind| Token {
            kind,
            at,
            closed: true,
        };
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            tokens.push(token(Kind::Open));
            i += 1;
        } else if c == ')' {
            tokens.push(token(Kind::Close));
            i += 1;
        } else if c == '"' {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == '"')
                .map(|n| i + 1 + n);
            let stop = end.unwrap_or(chars.len());
            let phrase: String = chars[i + 1..stop].iter().collect();
            tokens.push(Token {
                kind: Kind::Phrase(phrase),
                at,
                closed: end.is_some(),
            });
            i = stop + 1;
        } else if c == '+' || c == '-' {
            // A prefix only when something follows it at once; else it has nothing to apply to.
            let attached = chars
                .get(i + 1)
                .is_some_and(|&n| !n.is_whitespace() && n != ')');
            if attached {
                tokens.push(token(if c == '+' { Kind::Plus } else { Kind::Minus }));
            } else {
                let operator = if c == '+' { "+" } else { "-" };
                problems.push(Problem::DanglingOperator { operator, at });
            }
            i += 1;
        } else {
            let end = chars[i..]
                .iter()
                .position(|&c| c.is_whitespace() || c == '(' || c == ')' || c == '"')
                .map_or(chars.len(), |n| i + n);
            let word: String = chars[i..end].iter().collect();
            i = end;
            let kind = match word.as_str() {
                "AND" => Kind::And,
                "OR" => Kind::Or,
                "NOT" => Kind::Not,
                _ => match word.split_once(':') {
                    Some((name, rest)) if FieldName::parse(name).is_some() => {
                        let field = FieldName::parse(name).unwrap_or(FieldName::Content);
                        if rest.is_empty() && chars.get(i) == Some(&'"') {
                            tokens.push(token(Kind::Field(field)));
                            continue;
                        }
                        if rest.is_empty() {
                            Kind::Word(word)
                        } else {
                            tokens.push(token(Kind::Field(field)));
                            tokens.push(Token {
                                kind: Kind::Word(rest.to_owned()),
                                at: at + name.chars().count() + 1,
                                closed: true,
                            });
                            continue;
                        }
                    }
                    _ => Kind::Word(word),
                },
            };
            tokens.push(token(kind));
        }
    }
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    problems: Vec<Problem>,
}

impl Parser {
    fn peek(&self) -> Option<&Kind> {
        self.tokens.get(self.at).map(|t| &t.kind)
    }

    fn position(&self) -> usize {
        self.tokens.get(self.at).map_or(0, |t| t.at)
    }

    fn dangling(&mut self, operator: &'static str, at: usize) {
        self.problems
            .push(Problem::DanglingOperator { operator, at });
    }

    /// Whether the next token may begin an operand.
    fn starts_operand(&self) -> bool {
        matches!(
            self.peek(),
            Some(
                Kind::Word(_)
                    | Kind::Phrase(_)
                    | Kind::Field(_)
                    | Kind::Not
                    | Kind::Plus
                    | Kind::Minus
                    | Kind::Open
            )
        )
    }

    /// `group (OR group)*`, up to the end or a `)`.
    fn or_expr(&mut self) -> Option<Node> {
        let mut groups = Vec::new();
        let mut pending_or: Option<usize> = None;
        loop {
            match self.peek() {
                None | Some(Kind::Close) => break,
                Some(Kind::Or) => {
                    let at = self.position();
                    self.at += 1;
                    if groups.is_empty() || pending_or.is_some() {
                        self.dangling("OR", at);
                    }
                    pending_or = Some(at);
                }
                Some(Kind::And) => {
                    // An AND with nothing on its left (at the start, after OR or `(`).
                    let at = self.position();
                    self.at += 1;
                    self.dangling("AND", at);
                }
                Some(_) => {
                    if let Some(g) = self.group() {
                        groups.push(g);
                    }
                    pending_or = None;
                }
            }
        }
        if let Some(at) = pending_or
            && !groups.is_empty()
        {
            self.dangling("OR", at);
        }
        match groups.len() {
            0 => None,
            1 => groups.pop(),
            _ => Some(Node::Or(groups)),
        }
    }

    /// Juxtaposed `and_expr`s.
    fn group(&mut self) -> Option<Node> {
        let mut items: Vec<(Sign, Node)> = Vec::new();
        while self.starts_operand() {
            if let Some(item) = self.and_expr() {
                items.push(item);
            }
        }
        match items.len() {
            0 => None,
            1 if items[0].0 == Sign::Plain => items.pop().map(|(_, n)| n),
            _ => Some(Node::Group(items)),
        }
    }

    /// `unary (AND unary)*`: its sign when it is one unary, else plain.
    fn and_expr(&mut self) -> Option<(Sign, Node)> {
        let mut operands: Vec<(Sign, Node)> = Vec::new();
        let mut last_and: Option<usize> = None;
        if let Some(u) = self.unary() {
            operands.push(u);
        }
        while self.peek() == Some(&Kind::And) {
            let at = self.position();
            self.at += 1;
            if operands.is_empty() {
                self.dangling("AND", at);
            }
            if self.starts_operand() {
                last_and = None;
                if let Some(u) = self.unary() {
                    operands.push(u);
                }
            } else {
                last_and = Some(at);
            }
        }
        if let Some(at) = last_and
            && !operands.is_empty()
        {
            self.dangling("AND", at);
        }
        match operands.len() {
            0 => None,
            1 => operands.pop(),
            _ => Some((
                Sign::Plain,
                Node::And(
                    operands
                        .into_iter()
                        .map(|(s, n)| (s == Sign::Negated, n))
                        .collect(),
                ),
            )),
        }
    }

    /// Prefixes, then a word, a phrase or a parenthesised query.
    fn unary(&mut self) -> Option<(Sign, Node)> {
        let mut sign = Sign::Plain;
        let mut prefixes: Vec<(&'static str, usize)> = Vec::new();
        loop {
            let at = self.position();
            match self.peek() {
                Some(Kind::Not) => prefixes.push(("NOT", at)),
                Some(Kind::Minus) => prefixes.push(("-", at)),
                Some(Kind::Plus) => prefixes.push(("+", at)),
                _ => break,
            }
            self.at += 1;
        }
        for (p, _) in &prefixes {
            sign = match (*p, sign) {
                ("+", Sign::Plain) => Sign::Required,
                ("+", s) => s,
                (_, Sign::Negated) => Sign::Plain,
                (_, _) => Sign::Negated,
            };
        }
        let node = self.primary();
        if node.is_none()
            && let Some((p, at)) = prefixes.last()
        {
            self.dangling(p, *at);
        }
        node.map(|n| (sign, n))
    }

    fn primary(&mut self) -> Option<Node> {
        let token = self.tokens.get(self.at)?.clone();
        match token.kind {
            Kind::Word(w) => {
                self.at += 1;
                Some(Node::Leaf(Leaf {
                    field: None,
                    text: w,
                    quoted: false,
                }))
            }
            Kind::Phrase(p) => {
                self.at += 1;
                self.phrase(None, p, token.at, token.closed)
            }
            Kind::Field(field) => {
                self.at += 1;
                let next = self.tokens.get(self.at).cloned();
                match next.map(|t| (t.kind.clone(), t)) {
                    Some((Kind::Word(w), _)) => {
                        self.at += 1;
                        Some(Node::Leaf(Leaf {
                            field: Some(field),
                            text: w,
                            quoted: false,
                        }))
                    }
                    Some((Kind::Phrase(p), t)) => {
                        self.at += 1;
                        self.phrase(Some(field), p, t.at, t.closed)
                    }
                    // The lexer makes a field only before a word or a quote.
                    _ => None,
                }
            }
            Kind::Open => {
                self.at += 1;
                let inner = self.or_expr();
                if self.peek() == Some(&Kind::Close) {
                    self.at += 1;
                } else {
                    self.problems
                        .push(Problem::UnclosedParenthesis { at: token.at });
                }
                if inner.is_none() {
                    self.problems.push(Problem::Empty {
                        what: "group",
                        at: token.at,
                    });
                }
                inner
            }
            _ => None,
        }
    }

    fn phrase(
        &mut self,
        field: Option<FieldName>,
        text: String,
        at: usize,
        closed: bool,
    ) -> Option<Node> {
        if !closed {
            self.problems.push(Problem::UnclosedQuote { at });
        }
        if text.trim().is_empty() {
            self.problems.push(Problem::Empty { what: "phrase", at });
            return None;
        }
        Some(Node::Leaf(Leaf {
            field,
            text: text.trim().to_owned(),
            quoted: true,
        }))
    }
}

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(field) = self.field {
            write!(f, "{}:", field.as_str())?;
        }
        if self.quoted {
            write!(f, "\"{}\"", self.text)
        } else {
            write!(f, "{}", self.text)
        }
    }
}

impl Node {
    /// Written as an operand of a prefix or `AND`: a compound in parentheses.
    fn fmt_operand(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Leaf(l) => write!(f, "{l}"),
            other => write!(f, "({other})"),
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Leaf(l) => write!(f, "{l}"),
            Node::Group(items) => {
                for (i, (sign, node)) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    match (sign, node) {
                        // AND binds tighter than juxtaposition: no parentheses needed.
                        (Sign::Plain, Node::And(_) | Node::Leaf(_)) => write!(f, "{node}")?,
                        (Sign::Plain, _) => write!(f, "({node})")?,
                        (Sign::Required, _) => {
                            write!(f, "+")?;
                            node.fmt_operand(f)?;
                        }
                        (Sign::Negated, _) => {
                            write!(f, "-")?;
                            node.fmt_operand(f)?;
                        }
                    }
                }
                Ok(())
            }
            Node::And(operands) => {
                for (i, (negated, node)) in operands.iter().enumerate() {
                    if i > 0 {
                        write!(f, " AND ")?;
                    }
                    if *negated {
                        write!(f, "NOT ")?;
                    }
                    node.fmt_operand(f)?;
                }
                Ok(())
            }
            Node::Or(groups) => {
                for (i, node) in groups.iter().enumerate() {
                    if i > 0 {
                        write!(f, " OR ")?;
                    }
                    match node {
                        Node::Or(_) => write!(f, "({node})")?,
                        _ => write!(f, "{node}")?,
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The tree in a compact prefix form, to compare against.
    fn show(text: &str) -> (String, Vec<String>) {
        let p = parse(text);
        (
            p.node.map(|n| n.to_string()).unwrap_or_default(),
            p.problems.iter().map(ToString::to_string).collect(),
        )
    }

    fn check(text: &str, expect: &str) {
        let (got, problems) = show(text);
        assert!(problems.is_empty(), "{text}: {problems:?}");
        assert_eq!(got, expect, "{text}");
    }

    fn check_repaired(text: &str, expect: &str, problem: &str) {
        let (got, problems) = show(text);
        assert_eq!(got, expect, "{text}");
        assert!(
            problems.iter().any(|p| p.contains(problem)),
            "{text}: {problems:?}"
        );
    }

    #[test]
    fn precedence_is_not_then_and_then_juxtaposition_then_or() {
        check("dark mode", "dark mode");
        check(
            "\"dark mode\" AND NOT Friday",
            "\"dark mode\" AND NOT Friday",
        );
        check("a AND b OR c", "a AND b OR c");
        check("a OR b AND c", "a OR b AND c");
        check("a b AND c", "a b AND c");
        check("NOT a AND b", "NOT a AND b");
        check("a -b +c", "a -b +c");
        check("a NOT b", "a -b");
        check("NOT NOT a", "a");
        check("-(a OR b) c", "-(a OR b) c");
        check("(a OR b) AND NOT (c d)", "(a OR b) AND NOT (c d)");
        check(
            "keywords:\"dark mode\" sector:episodic",
            "keywords:\"dark mode\" sector:episodic",
        );
        check("not and or", "not and or");
        check("10:30 e-mail", "10:30 e-mail");
        let p = parse("a OR b AND NOT c");
        assert_eq!(
            p.node,
            Some(Node::Or(vec![
                Node::Leaf(Leaf {
                    field: None,
                    text: "a".into(),
                    quoted: false
                }),
                Node::And(vec![
                    (
                        false,
                        Node::Leaf(Leaf {
                            field: None,
                            text: "b".into(),
                            quoted: false
                        })
                    ),
                    (
                        true,
                        Node::Leaf(Leaf {
                            field: None,
                            text: "c".into(),
                            quoted: false
                        })
                    ),
                ]),
            ]))
        );
    }

    #[test]
    fn malformed_text_is_repaired_and_reported() {
        check_repaired("dark AND (mode", "dark AND mode", "never closed");
        check_repaired("dark) mode", "dark mode", "closes nothing");
        check_repaired("\"dark mode", "\"dark mode\"", "never closed");
        check_repaired("dark AND", "dark", "'AND' at character 6");
        check_repaired("OR dark", "dark", "'OR' at character 1");
        check_repaired("dark OR OR mode", "dark OR mode", "'OR' at character 9");
        check_repaired("AND", "", "'AND'");
        check_repaired("dark NOT", "dark", "'NOT' at character 6");
        check_repaired("dark - mode", "dark mode", "'-' at character 6");
        check_repaired("dark () mode", "dark mode", "group at character 6 is empty");
        check_repaired("\"\" dark", "dark", "phrase at character 1 is empty");
        let deep = format!("{}a{}", "(".repeat(40), ")".repeat(40));
        check_repaired(&deep, "a", "nests deeper");
        // Deep enough to exhaust the stack of a parser that recursed once per parenthesis.
        let deeper = format!("{}a OR b{}", "(NOT ".repeat(50_000), ")".repeat(50_000));
        assert!(parse(&deeper).node.is_some());
    }

    proptest! {
        #[test]
        fn any_text_parses_and_its_repair_reads_back_unchanged(
            text in "[a-c ()\"+:-]{0,24}|(AND|OR|NOT|a|b|\\(|\\)|\"|-|\\+| ){0,16}"
        ) {
            let first = parse(&text);
            if let Some(node) = &first.node {
                let again = parse(&node.to_string());
                prop_assert!(again.problems.is_empty(), "{text:?} → {node} → {:?}", again.problems);
                prop_assert_eq!(again.node.as_ref(), Some(node), "{:?}", text);
            }
        }
    }
}
