//! The fallacy tests of `thinkledger.cognition.argument/2`, one function per fallacy over a
//! [`Passage`]. Each is a general mechanism, not a list of sentences: a conclusion whose
//! concepts the rest of the passage already holds (circular); a general or absolute claim
//! beside a few cases or none (hasty generalisation); a count of options (false dilemma); a
//! person's standing without evidence (appeal to authority); a crowd as the subject of an
//! adoption or belief (bandwagon); a conclusion that shares no concept with, and lies far in
//! meaning from, everything before it (non sequitur). Each finds at most one instance, and
//! only when the passage gives no evidence that would make the shape sound (a figure, a
//! measurement, a study).
//!
//! Pure. Must not know MCP or the ledger.

use std::sync::LazyLock;

use regex::Regex;

use super::argument::{
    EXACT_NUMBERS, Fallacy, Finding, OBSERVED, PRONOUNS, Passage, STOP, Token, clauses, compile,
    concept_set, concepts, evidence, has_digit, judges, polarity, tokens,
};
use super::bias::Span;
use super::examples;

/// The reason of a hasty generalisation from a few cases (an unsupported absolute has
/// another).
pub(super) const FEW_CASES: &str = "a general claim rests on a few cases";

fn finding(
    fallacy: Fallacy,
    (start, end): (usize, usize),
    confidence: f64,
    reason: &'static str,
) -> Finding {
    Finding {
        fallacy,
        span: Span { start, end },
        confidence,
        reason,
    }
}

// ---------------------------------------------------------------------------------------------
// Hasty generalisation and unsupported absolutes.

/// Universal scope.
pub(super) static UNIVERSAL: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(all|every|everyone|everybody|always|never|none|nobody|no one|any|the whole|the entire)\b",
    )
});
/// "on every commit", "each month": distributive, not a claim about all of a kind.
static DISTRIBUTIVE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b(?:on|in|for|of|at|by) (?:every|all|each)\b"));
static ABSOLUTE_SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^\W*(?:and |but |so |therefore )?(all|every|everyone|everybody|nobody|no one|none)\b|\b(always|never)\b",
    )
});

const PERSONS: &str = "friend|friends|colleague|colleagues|neighbou?r|neighbou?rs|coworker|coworkers|relative|relatives|cousin|cousins|uncle|aunt|brother|sister|guy|woman|man|person|kid|customer|customers|user|users|student|students|intern|interns|employee|employees|patient|patients";

/// A few cases: once, a friend, my neighbour's, two of the interns, the one customer we
/// interviewed, one review.
static FEW: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\b(?:once|twice|a single|the one|the only)".to_owned(),
        r"\bone of (?:my|our|the)".to_owned(),
        format!(r"\ba (?:{PERSONS})\b(?: of (?:mine|ours))?"),
        r"\b(?:i know someone|someone i know|i tried|i met|i saw|i heard|i once|happened to me)".to_owned(),
        r"\b(?:my|our) (?:two|three|first) \w+".to_owned(),
        format!(r"\b(?:two|three|a couple of|a few|one|1|2|3) (?:\w+ )?(?:{PERSONS})\b"),
        r"\b(?:two|three|a couple|a few) of (?:the|our|my) \w+".to_owned(),
        r"\b(?:the first|the last|the latest|the only|the one|one) \w+ (?:we|i|who|that)".to_owned(),
        r"\b(?:one|a single) (?:\w+ )?(?:review|story|case|example|time|incident|experience|test|trial|anecdote|article|video|post)".to_owned(),
    ]
    .iter()
    .map(|p| compile(p))
    .collect()
});

/// Where the first few-cases cue starts.
fn few_cases(p: &Passage<'_>) -> Option<usize> {
    let mut first = FEW
        .iter()
        .filter_map(|re| re.find(&p.lower).map(|m| m.start()))
        .min();
    // "my laptop", "my neighbour's": one's own single case (not "my own", not a plural).
    for (i, t) in p.tokens.iter().enumerate() {
        if t.word == "my"
            && let Some(n) = p.tokens.get(i + 1)
            && n.word != "own"
            && !p.text[n.start..n.end]
                .split(['\'', '’'])
                .next()
                .unwrap_or("")
                .ends_with('s')
            && first.is_none_or(|f| t.start < f)
        {
            first = Some(t.start);
        }
    }
    first
}

/// A count of at least ten cases: a number ≥ 10 before a plural noun or "percent", or a
/// sample size.
fn many_cases(ts: &[Token]) -> bool {
    ts.iter().enumerate().any(|(i, t)| {
        let w = t.word.as_str();
        let digits = w.replace(',', "");
        let big = (!digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && digits.parse::<u64>().map_or(true, |n| n >= 10))
            || matches!(
                w,
                "hundred"
                    | "hundreds"
                    | "thousand"
                    | "thousands"
                    | "million"
                    | "millions"
                    | "dozens"
                    | "dozen"
            );
        let counted = ts[i + 1..].iter().take(2).any(|x| {
            (x.word.ends_with('s') && x.word.len() > 3) || x.word == "percent" || x.word == "n"
        });
        (big && counted) || w == "percent" || w == "n"
    })
}

const LEADING: &[&str] = &[
    "so",
    "therefore",
    "thus",
    "hence",
    "and",
    "but",
    "then",
    "that",
    "clearly",
    "obviously",
    "simply",
    "surely",
    "which",
    "proves",
    "shows",
    "means",
];
const PRESENT_AFTER_NOUN: &[&str] = &[
    "is", "isnt", "are", "arent", "cant", "cannot", "doesnt", "dont", "always", "never",
];
const PRESENT_AFTER_PLURAL: &[&str] = &[
    "are", "arent", "do", "dont", "can", "cant", "cannot", "will", "wont", "never", "always",
    "simply", "hate", "want", "know", "need", "lack", "love",
];

/// A clause about a kind in general: a bare noun or plural as its subject, in the present
/// tense ("Teenagers are terrible drivers", "Heat pumps simply can't cope", "Smoking is not
/// that dangerous").
fn generic(ts: &[Token]) -> bool {
    let ws: Vec<&str> = ts.iter().map(|t| t.word.as_str()).collect();
    let i = ws.iter().take_while(|w| LEADING.contains(w)).count();
    let Some(first) = ws.get(i) else {
        return false;
    };
    let content = |w: &str| !STOP.contains(&w) && !PRONOUNS.contains(&w) && !has_digit(w);
    if content(first)
        && ws
            .get(i + 1)
            .is_some_and(|w| PRESENT_AFTER_NOUN.contains(w))
    {
        return true;
    }
    for k in [i, i + 1] {
        let Some(w) = ws.get(k) else {
            break;
        };
        if k == i + 1 && (STOP.contains(first) || has_digit(first)) {
            break;
        }
        if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && content(w) {
            for r in ws.iter().skip(k + 1).take(5) {
                if r.ends_with("ed") || matches!(*r, "was" | "were" | "had" | "did" | "didnt") {
                    return false;
                }
                if PRESENT_AFTER_PLURAL.contains(r) {
                    return true;
                }
            }
        }
    }
    false
}

/// A general claim (universal or generic) beside a few cases and no count of many; else an
/// absolute claim in a passage without any evidence.
pub(super) fn hasty(p: &Passage<'_>) -> Option<Finding> {
    let general: Vec<(usize, usize)> = clauses(p.text)
        .into_iter()
        .filter(|(a, b)| {
            let clause = &p.lower[*a..*b];
            generic(&p.tokens_in(&[(*a, *b)]))
                || (UNIVERSAL.is_match(clause)
                    && !has_digit(clause)
                    && !DISTRIBUTIVE.is_match(clause))
        })
        .collect();
    if let Some(cue) = few_cases(p)
        && !many_cases(&p.tokens)
        && let Some(g) = general.iter().find(|(a, b)| !(*a <= cue && cue < *b))
    {
        return Some(finding(Fallacy::HastyGeneralisation, *g, 0.8, FEW_CASES));
    }
    if evidence(&p.tokens) {
        return None;
    }
    clauses(p.text)
        .into_iter()
        .find(|(a, b)| {
            let clause = &p.lower[*a..*b];
            ABSOLUTE_SUBJECT.is_match(clause) && !crowd(clause)
        })
        .map(|c| {
            finding(
                Fallacy::HastyGeneralisation,
                c,
                0.6,
                "an absolute claim (all, every, always, never, nobody) with no cases or figures behind it",
            )
        })
}

// ---------------------------------------------------------------------------------------------
// Bandwagon.

static CROWD: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(everyone|everybody|nobody|no one|all (?:the |my |our |their )?(?:other )?\w+s|most (?:of )?(?:the |our )?(?:\w+ )?\w+s|many \w+s|millions|thousands|half (?:of )?the (?:\w+ )?\w+s|the whole \w+|the entire \w+|every (?:\w+ )?(?:\w+ )?(?:company|team|lab|firm|school|country|city|business|startup|developer|engineer|expert|user|customer)|the majority of|other (?:teams|companies|labs|firms|schools|countries|cities|businesses|startups|developers|engineers|users|customers|people))\b",
    )
});
static ADOPT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(switch\w*|adopt\w*|using|use|uses|used|moved|moving|move|believe\w*|buy\w*|bought|cho(?:se|ose|osing)|join\w*|passed|follow\w*|writes|write|implement\w*|rolled out|going|gone|doing|have|has|own|owns|wear|wears|drive|drives|eat|eats|watch|watches|vote|voted|agree|agrees|support|supports|trust|trusts|love|loves|swear|swears|can['’]t be wrong|cannot be wrong|bestsell\w*|best-selling|popular|trending|viral)\b",
    )
});
static POPULAR: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(bestsell\w*|best-selling|popular|trending|viral|in fashion|fashionable|everyone is talking)\b",
    )
});
/// A conclusion of merit or imitation.
static MERIT: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(should|must|ought|need to|needs to|have to|has to|must be|has to be|can['’]t be wrong|cannot be wrong|something to it|too|as well|follow|join|same|out of step|left behind|behind the times|catch up)\b",
    )
});

/// A crowd as the subject of an adoption or belief ("most labs have switched").
fn crowd(clause: &str) -> bool {
    CROWD.is_match(clause) && ADOPT.is_match(clause)
}

/// An uncounted crowd adopting or believing something (or "popular", "bestseller"), and a
/// conclusion of merit or imitation.
pub(super) fn bandwagon(p: &Passage<'_>) -> Option<Finding> {
    let conclusion = if p.links.is_empty() {
        p.lower.clone()
    } else {
        p.links
            .iter()
            .map(|l| &p.lower[l.conclusion.0..l.conclusion.1])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let merit = MERIT.is_match(&conclusion) || judges(&tokens(&conclusion));
    if !merit {
        return None;
    }
    clauses(p.text)
        .into_iter()
        .chain(p.sentences.iter().copied())
        .find(|(a, b)| {
            let clause = &p.lower[*a..*b];
            let counted = has_digit(clause)
                || tokens(clause)
                    .iter()
                    .any(|t| EXACT_NUMBERS.contains(&t.word.as_str()));
            !counted && (crowd(clause) || POPULAR.is_match(clause))
        })
        .map(|s| {
            finding(
                Fallacy::Bandwagon,
                s,
                0.75,
                "what many do or believe is given as the reason it is right",
            )
        })
}

// ---------------------------------------------------------------------------------------------
// Appeal to authority.

const ROLES: &[&str] = &[
    "physician",
    "politician",
    "historian",
    "ceo",
    "cto",
    "cfo",
    "founder",
    "president",
    "chairman",
    "director",
    "head",
    "chief",
    "boss",
    "manager",
    "expert",
    "experts",
    "professor",
    "prof",
    "dr",
    "doctor",
    "scientist",
    "scientists",
    "laureate",
    "celebrity",
    "actor",
    "actress",
    "star",
    "influencer",
    "guru",
    "senator",
    "minister",
    "official",
    "consultant",
    "analyst",
    "leader",
    "famous",
    "well-known",
    "renowned",
    "respected",
    "prominent",
    "eminent",
    "billionaire",
    "authority",
    "veteran",
    "legendary",
];
const ENDORSES: &[&str] = &[
    "says",
    "said",
    "believes",
    "thinks",
    "claims",
    "claimed",
    "told",
    "tells",
    "insists",
    "argues",
    "swears",
    "assures",
    "endorses",
    "endorsed",
    "recommends",
    "recommended",
    "approves",
    "approved",
    "backs",
    "backed",
    "praises",
    "praised",
    "promotes",
    "promoted",
    "vouches",
];
const ENDORSED_BY: &[&str] = &[
    "recommended",
    "endorsed",
    "approved",
    "backed",
    "praised",
    "promoted",
];

/// A person named by role, standing or trade (an economist, a dentist; not "list", "exist",
/// "insist").
fn role(word: &str) -> bool {
    if ROLES.contains(&word) {
        return true;
    }
    let Some(stem) = word.strip_suffix("ist") else {
        return false;
    };
    stem.len() >= 3
        && stem.chars().all(|c| c.is_ascii_alphabetic())
        && !["ex", "es", "ns", "ss", "ys", "rs", "yl", "kl", "hl"]
            .iter()
            .any(|s| stem.ends_with(s))
}

/// Whether the sentence cites a person's standing as a source: a role before a verb of
/// saying or endorsing (within 80 bytes), "recommended by" a role (within 60), "according to"
/// a role (within 40).
fn cites_standing(ts: &[Token]) -> bool {
    let near = |from: usize, span: usize, pred: &dyn Fn(&Token) -> bool| {
        ts[from + 1..]
            .iter()
            .take_while(|t| t.start <= ts[from].end + span)
            .any(pred)
    };
    ts.iter().enumerate().any(|(i, t)| {
        let w = t.word.as_str();
        (role(w) && near(i, 80, &|x| ENDORSES.contains(&x.word.as_str())))
            || (ENDORSED_BY.contains(&w)
                && ts.get(i + 1).is_some_and(|x| x.word == "by")
                && near(i + 1, 60, &|x| role(&x.word)))
            || (w == "according"
                && ts.get(i + 1).is_some_and(|x| x.word == "to")
                && near(i + 1, 40, &|x| role(&x.word)))
    })
}

/// A sentence citing a person's standing, in a passage with no evidence outside it (the
/// standing's own figures — twenty years, two million followers — are not evidence) and no
/// observation inside it.
pub(super) fn authority(p: &Passage<'_>) -> Option<Finding> {
    p.sentences
        .iter()
        .find(|(a, b)| {
            let inside = p.tokens_in(&[(*a, *b)]);
            if !cites_standing(&inside) {
                return false;
            }
            let outside = p.tokens_in(&p.around((*a, *b)));
            !evidence(&outside) && !inside.iter().any(|t| OBSERVED.contains(&t.word.as_str()))
        })
        .map(|s| {
            finding(
                Fallacy::AppealToAuthority,
                *s,
                0.75,
                "a person's standing is given as the reason, with no evidence for the claim itself",
            )
        })
}

// ---------------------------------------------------------------------------------------------
// False dilemma.

static STANCE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(if|anyone who|whoever|those who|people who|someone who) (you|we|they|he|she|someone|anyone)?(['’]re|['’]s)?\b[^,.;]*\b(not|don['’]t|doesn['’]t|do not|never|won['’]t|aren['’]t|isn['’]t|oppose|opposes|against|question|questions)\b[^.;]*\b(not|don['’]t|doesn['’]t|hate|hates|against|enemy|oppose|opposes|betray|traitor|care)\b",
    )
});
static EITHER: LazyLock<Regex> = LazyLock::new(|| compile(r"\beither\b.*\bor\b"));
static THIRD_OPTION: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b(or both|neither|another option|other options|a third)\b"));
static FEW_OPTIONS: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(only two|just two|two) (options|choices|ways|alternatives|paths|possibilities)\b|\b(?:the )?only (?:\w+ )?(option|choice|way|alternative|path|solution)\b|\bno (?:other )?(choice|option|alternative)\b",
    )
});
static OR: LazyLock<Regex> = LazyLock::new(|| compile(r"\bor\b"));
/// "or so", "or more", "two or three": not a choice.
const OR_NOT_BEFORE: &[&str] = &["so", "more", "less", "two", "three", "not"];

/// Options counted as two (or one): a stance equated with its opposite extreme ("if you don't
/// support X, you hate Y"); "either … or" with no third option named; "only two options", "the
/// only way", "no other choice"; and a choice between two options followed by a conclusion
/// that takes one. Except the stance, none counts in a passage with figures or observations
/// outside the sentence (a hypothesis tested, not a dilemma posed).
pub(super) fn dilemma(p: &Passage<'_>) -> Option<Finding> {
    for &(a, b) in &p.sentences {
        let s = &p.lower[a..b];
        if STANCE.is_match(s) {
            return Some(finding(
                Fallacy::FalseDilemma,
                (a, b),
                0.7,
                "opposing one thing is equated with the opposite extreme",
            ));
        }
        if tested_outside(p, (a, b)) {
            continue;
        }
        if EITHER.is_match(s) && !THIRD_OPTION.is_match(&p.lower) {
            return Some(finding(
                Fallacy::FalseDilemma,
                (a, b),
                0.8,
                "two options are offered as the only ones",
            ));
        }
        if FEW_OPTIONS.is_match(s) {
            return Some(finding(
                Fallacy::FalseDilemma,
                (a, b),
                0.75,
                "the options are framed as only two (or one)",
            ));
        }
    }
    for &(a, b) in &p.sentences {
        let s = &p.lower[a..b];
        if tested_outside(p, (a, b)) || s.contains("whether") || p.links.is_empty() {
            continue;
        }
        let Some(or) = OR.find_iter(s).find(|m| {
            let next = s[m.end()..].split_whitespace().next().unwrap_or("");
            !OR_NOT_BEFORE.contains(&next.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        }) else {
            continue;
        };
        let left = concept_set(&p.tokens_in(&[(a, a + or.start())]));
        let right = concept_set(&p.tokens_in(&[(a + or.end(), b)]));
        let takes_one = p.links.iter().filter(|l| l.conclusion.0 >= b).any(|l| {
            let c = concept_set(&p.tokens_in(&[l.conclusion]));
            let (l_, r_) = (!c.is_disjoint(&left), !c.is_disjoint(&right));
            l_ != r_
        });
        if takes_one {
            return Some(finding(
                Fallacy::FalseDilemma,
                (a, b),
                0.6,
                "two options are offered as the only ones, and the conclusion takes the one left",
            ));
        }
    }
    None
}

/// Figures or observations outside the span.
fn tested_outside(p: &Passage<'_>, span: (usize, usize)) -> bool {
    p.tokens_in(&p.around(span))
        .iter()
        .any(|t| has_digit(&t.word) || OBSERVED.contains(&t.word.as_str()))
}

// ---------------------------------------------------------------------------------------------
// Circular reasoning.

/// A conclusion whose concepts the rest of the passage already holds, with no evidence there:
/// every concept found again (a synonym, or any judgement of the same polarity, counts), but
/// one when a pronoun stands for it and one more when the conclusion has three or more.
pub(super) fn circular(p: &Passage<'_>) -> Option<Finding> {
    for (span, _) in p.conclusions() {
        let mut seen = Vec::new();
        for c in concepts(&p.tokens_in(&[span])) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        if seen.is_empty() {
            continue;
        }
        let premises = p.tokens_in(&p.around(span));
        if evidence(&premises) {
            continue;
        }
        let held = concept_set(&premises);
        let polarities: Vec<bool> = held.iter().filter_map(|c| polarity(c)).collect();
        let restated =
            |c: &String| held.contains(c) || polarity(c).is_some_and(|x| polarities.contains(&x));
        let missing = seen.iter().filter(|c| !restated(c)).count();
        if missing == seen.len() {
            continue;
        }
        let allowed = usize::from(premises.iter().any(|t| PRONOUNS.contains(&t.word.as_str())))
            + usize::from(seen.len() >= 3);
        if missing <= allowed {
            return Some(finding(
                Fallacy::Circular,
                span,
                0.8,
                "the conclusion restates what the premises already say",
            ));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Non sequitur.

/// Below this cosine (potion-base-2M) a conclusion and its premises are about different
/// things.
const UNRELATED: f64 = 0.2;

/// A conclusion introduced by a marker, without a pronoun pointing back, that shares no
/// concept with the rest of the passage (both having two or more) and whose vector lies far from the rest's (cosine below 0.2; below
/// 0.1 the finding is surer).
pub(super) fn non_sequitur(p: &Passage<'_>) -> Option<Finding> {
    for (span, marked) in p.conclusions() {
        if !marked {
            continue;
        }
        let words = p.tokens_in(&[span]);
        if words.iter().any(|t| PRONOUNS.contains(&t.word.as_str())) {
            // "… so we must roll it back": the pronoun points back at the premises.
            continue;
        }
        let conclusion = concept_set(&words);
        let around = p.around(span);
        let premises = concept_set(&p.tokens_in(&around));
        if conclusion.len() < 2 || premises.len() < 2 || !conclusion.is_disjoint(&premises) {
            continue;
        }
        let rest = around
            .iter()
            .map(|(a, b)| &p.text[*a..*b])
            .collect::<Vec<_>>()
            .join(" ");
        let Some(similarity) = examples::similarity(&p.text[span.0..span.1], &rest) else {
            continue;
        };
        if similarity < UNRELATED {
            return Some(finding(
                Fallacy::NonSequitur,
                span,
                if similarity < 0.1 { 0.8 } else { 0.6 },
                "the conclusion shares nothing with the premises and is far from them in meaning",
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_cases() {
        assert!(role("economist") && role("dentist") && role("ceo"));
        assert!(!role("list") && !role("insist") && !role("resist") && !role("playlist"));
        assert!(many_cases(&tokens("a survey of 1,200 customers")));
        assert!(!many_cases(&tokens("he lived to 95")));
        assert!(generic(&tokens("Heat pumps simply can't cope")));
        assert!(!generic(&tokens("Crash reports spiked only on Android 14")));
    }
}
