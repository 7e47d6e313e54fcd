//! The evaluation of the emotion and bias rules on the labelled sets in `tests/cognition/`:
//! per-class accuracy on the sets the rules were written against, and the held-out sets'
//! thresholds (primary emotion right for ≥ 3/4, valence sign right on every clearly signed
//! sentence, ≥ 6 of 8 bias types recognised). The figures are printed (`--nocapture`) and
//! reported in docs/cognition.md.

// The figures are the point of these tests: they print them.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

use super::examples::{EMOTION_SETS, Examples, labelled};
use super::{bias, emotion};

fn rows(tsv: &str) -> Vec<Vec<&str>> {
    tsv.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
        .collect()
}

/// (right, total) per label.
fn tally(results: &[(String, bool)]) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (label, right) in results {
        let e = out.entry(label.clone()).or_default();
        e.0 += usize::from(*right);
        e.1 += 1;
    }
    out
}

fn print(name: &str, t: &BTreeMap<String, (usize, usize)>) -> (usize, usize) {
    let (mut r, mut n) = (0, 0);
    for (label, (right, total)) in t {
        println!("{name}\t{label}\t{right}/{total}");
        r += right;
        n += total;
    }
    println!("{name}\tall\t{r}/{n}");
    (r, n)
}

#[test]
fn emotion_per_class_accuracy() {
    let data = rows(include_str!("../../../tests/cognition/emotion.tsv"));
    assert!(data.len() >= 40);
    let results: Vec<(String, bool)> = data
        .iter()
        .map(|r| {
            let got = emotion::read(r[1]).discrete.primary;
            if got.as_deref() != Some(r[0]) {
                println!("emotion\tmissed\t{}\t{got:?}\t{}", r[0], r[1]);
            }
            (r[0].to_owned(), got.as_deref() == Some(r[0]))
        })
        .collect();
    let t = tally(&results);
    assert_eq!(t.len(), 11, "all eleven emotions are labelled");
    let (right, total) = print("emotion", &t);
    assert!(right * 4 >= total * 3, "{right}/{total}");
}

/// The valence sign an emotion implies: joy, pride, gratitude and awe positive; sadness,
/// anger, fear, disgust, shame and guilt negative; surprise either.
fn implied_sign(emotion: &str) -> Option<f64> {
    match emotion {
        "joy" | "pride" | "gratitude" | "awe" => Some(1.0),
        "surprise" => None,
        _ => Some(-1.0),
    }
}

#[test]
fn emotion_valence_sign_on_the_development_set() {
    let data = rows(include_str!("../../../tests/cognition/emotion.tsv"));
    let (mut right, mut signed) = (0, 0);
    for r in &data {
        let Some(sign) = implied_sign(r[0]) else {
            continue;
        };
        signed += 1;
        let v = emotion::read(r[1]).circumplex.valence;
        if v * sign > 0.0 {
            right += 1;
        } else {
            println!("valence\tmissed\t{}\t{v}\t{}", r[0], r[1]);
        }
    }
    println!("valence\tdevelopment\t{right}/{signed}");
    assert!(right * 10 >= signed * 9, "{right}/{signed}");
}

/// One held-out emotion set's figures: primary right, sentences, and the clearly signed
/// sentences whose valence has the wrong sign.
fn emotion_figures(name: &str, tsv: &str) -> (usize, usize, Vec<String>) {
    let data = rows(tsv);
    let mut right = 0;
    let mut wrong_sign = Vec::new();
    for r in &data {
        let reading = emotion::read(r[2]);
        let ok = reading.discrete.primary.as_deref() == Some(r[0]);
        right += usize::from(ok);
        let v = reading.circumplex.valence;
        println!(
            "{name}\t{}\t{:?}\t{ok}\tvalence {v}\t{}",
            r[0], reading.discrete.primary, r[2]
        );
        if (r[1] == "+" && v <= 0.0) || (r[1] == "-" && v >= 0.0) {
            wrong_sign.push(r[2].to_owned());
        }
    }
    let signed = data.iter().filter(|r| r[1] != "0").count();
    println!("{name}\tprimary\t{right}/{}", data.len());
    println!(
        "{name}\tvalence sign right\t{}/{signed}\twrong: {wrong_sign:?}",
        signed - wrong_sign.len()
    );
    (right, data.len(), wrong_sign)
}

/// The thresholds on the eighth held-out set (written, like the seventh, by a writer
/// who had seen neither the rules nor an earlier set, committed unread before its first run):
/// primary emotion right for ≥ 3/4, valence sign right on every clearly signed sentence. Not
/// met at its first run under emotion/6 (31/44 primary, 36/43 signs — as on the seventh set;
/// docs/cognition.md): issue 13 stays open until a fresh held-out set passes. Run it with
/// `--ignored`.
#[test]
#[ignore = "issue 13: the held-out emotion thresholds are not met yet (docs/cognition.md)"]
fn emotion_held_out() {
    let (right, total, wrong_sign) = emotion_figures(
        "heldout8",
        include_str!("../../../tests/cognition/emotion_heldout8.tsv"),
    );
    assert!(
        wrong_sign.is_empty(),
        "valence sign wrong for {wrong_sign:?}"
    );
    assert!(right * 4 >= total * 3, "{right}/{total}");
}

/// The earlier held-out sets, reported only: their misses informed later rule changes (made on
/// the development set), so they no longer test held-out accuracy; the third set's were looked
/// at while writing emotion/4, the fourth set's while writing emotion/5. The figures are the
/// current rules' (docs/cognition.md gives each set's figures at its first run too).
#[test]
fn emotion_earlier_held_out_sets_reported() {
    // (set, its sentences, primary right, sentences, wrong valence signs)
    let sets = [
        (
            "heldout1",
            include_str!("../../../tests/cognition/emotion_heldout.tsv"),
            11,
            12,
            0,
        ),
        (
            "heldout2",
            include_str!("../../../tests/cognition/emotion_heldout2.tsv"),
            22,
            22,
            0,
        ),
        (
            "heldout3",
            include_str!("../../../tests/cognition/emotion_heldout3.tsv"),
            22,
            22,
            0,
        ),
        (
            "heldout4",
            include_str!("../../../tests/cognition/emotion_heldout4.tsv"),
            25,
            26,
            0,
        ),
        (
            "heldout5",
            include_str!("../../../tests/cognition/emotion_heldout5.tsv"),
            10,
            26,
            10,
        ),
        (
            "heldout6",
            include_str!("../../../tests/cognition/emotion_heldout6.tsv"),
            29,
            33,
            2,
        ),
        (
            "heldout7",
            include_str!("../../../tests/cognition/emotion_heldout7.tsv"),
            31,
            44,
            6,
        ),
    ];
    let got: Vec<_> = sets
        .iter()
        .map(|(name, tsv, ..)| {
            let (r, t, w) = emotion_figures(name, tsv);
            (*name, r, t, w.len())
        })
        .collect();
    let pinned: Vec<_> = sets
        .iter()
        .map(|(name, _, r, t, w)| (*name, *r, *t, *w))
        .collect();
    assert_eq!(got, pinned);
}

#[test]
fn bias_per_class_accuracy() {
    let data = rows(include_str!("../../../tests/cognition/bias.tsv"));
    let results: Vec<(String, bool)> = data
        .iter()
        .map(|r| {
            let found = bias::detect(r[1]);
            let ok = if r[0] == "none" {
                found.is_empty()
            } else {
                found.iter().any(|f| f.kind == r[0])
            };
            if !ok {
                let kinds: Vec<&str> = found.iter().map(|f| f.kind.as_str()).collect();
                println!("bias\tmissed\t{}\t{kinds:?}\t{}", r[0], r[1]);
            }
            (r[0].to_owned(), ok)
        })
        .collect();
    let t = tally(&results);
    for kind in bias::BIAS_TYPES {
        assert!(
            t.get(kind).is_some_and(|(_, n)| *n >= 3),
            "{kind} has fewer than 3 examples"
        );
    }
    let (right, total) = print("bias", &t);
    assert!(right * 4 >= total * 3, "{right}/{total}");
}

/// Bias types recognised in one held-out set (one plain example per type).
fn bias_figures(name: &str, tsv: &str) -> (usize, usize) {
    let data = rows(tsv);
    let mut right = 0;
    for r in &data {
        let found = bias::detect(r[1]);
        let ok = found.iter().any(|f| f.kind == r[0]);
        println!(
            "{name}\t{}\t{ok}\t{:?}\t{}",
            r[0],
            found.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(),
            r[1]
        );
        right += usize::from(ok);
    }
    println!("{name}\tbias\t{right}/{}", data.len());
    (right, data.len())
}

/// The threshold on the eighth held-out set (three plain examples per type, taken as
/// three runs of one example each; written and committed as the emotion set): at least six of
/// the eight types recognised in every run. Not met at its first run under bias/5 (3/8 in each
/// run; the seventh set's was 2/8, 4/8, 1/8; docs/cognition.md). Run it with `--ignored`.
#[test]
#[ignore = "issue 13: the held-out bias threshold is not met reliably (docs/cognition.md)"]
fn bias_held_out() {
    let tsv = include_str!("../../../tests/cognition/bias_heldout8.tsv");
    let lines: Vec<&str> = tsv.lines().filter(|l| !l.starts_with('#')).collect();
    let runs: Vec<(usize, usize)> = lines
        .chunks(8)
        .enumerate()
        .map(|(run, examples)| bias_figures(&format!("heldout8-{}", run + 1), &examples.join("\n")))
        .collect();
    for (run, (right, total)) in runs.iter().enumerate() {
        assert_eq!(*total, 8, "one example per type");
        assert!(*right >= 6, "run {}: {right}/8", run + 1);
    }
}

/// The earlier held-out sets, reported only (see `emotion_earlier_held_out_sets_reported`).
#[test]
fn bias_earlier_held_out_sets_reported() {
    // (set, its examples, types recognised, examples)
    let sets = [
        (
            "heldout1",
            include_str!("../../../tests/cognition/bias_heldout.tsv"),
            8,
            8,
        ),
        (
            "heldout2",
            include_str!("../../../tests/cognition/bias_heldout2.tsv"),
            8,
            8,
        ),
        (
            "heldout3",
            include_str!("../../../tests/cognition/bias_heldout3.tsv"),
            8,
            8,
        ),
        (
            "heldout4",
            include_str!("../../../tests/cognition/bias_heldout4.tsv"),
            7,
            8,
        ),
        (
            "heldout5",
            include_str!("../../../tests/cognition/bias_heldout5.tsv"),
            3,
            8,
        ),
        (
            "heldout6",
            include_str!("../../../tests/cognition/bias_heldout6.tsv"),
            7,
            16,
        ),
        (
            "heldout7",
            include_str!("../../../tests/cognition/bias_heldout7.tsv"),
            7,
            24,
        ),
    ];
    let got: Vec<_> = sets
        .iter()
        .map(|(name, tsv, ..)| (*name, bias_figures(name, tsv)))
        .collect();
    let pinned: Vec<_> = sets
        .iter()
        .map(|(name, _, r, t)| (*name, (*r, *t)))
        .collect();
    assert_eq!(got, pinned);
}

/// Reasoning without a bias (`bias_none.tsv`, many of them sound reasoning on a bias's usual
/// topic): how many a type is wrongly found in, by patterns and by resemblance (each sentence's
/// own line left out of the vote). Reported, and pinned so a change is seen.
#[test]
fn bias_false_alarms_on_reasoning_without_a_bias_reported() {
    let data = rows(include_str!("../../../tests/cognition/bias_none.tsv"));
    let (mut by_pattern, mut by_examples) = (0, 0);
    for r in &data {
        let found = bias::detect(r[1]);
        if !found.is_empty() {
            println!(
                "bias-none\tfalse alarm\t{:?}\t{}",
                found
                    .iter()
                    .map(|f| format!("{} ({})", f.kind, f.basis))
                    .collect::<Vec<_>>(),
                r[1]
            );
        }
        by_pattern += usize::from(found.iter().any(|f| f.basis == "pattern"));
        by_examples += usize::from(found.iter().any(|f| f.basis == "examples"));
    }
    println!(
        "bias-none\tfalse alarms\tpatterns {by_pattern}/{n}\texamples {by_examples}/{n}",
        n = data.len()
    );
    assert_eq!((by_pattern, by_examples, data.len()), (5, 7, 32));
}

/// Sentences without an emotion: which are given one (a primary emotion, by any basis) and
/// which get a valence of 0.3 or more either way. Each sentence's own line is left out of the
/// vote (both development sets are among the examples).
fn neutral_figures(name: &str, tsv: &str) -> (usize, usize, usize) {
    let data: Vec<_> = rows(tsv).into_iter().filter(|r| r[0] != "label").collect();
    let (mut given, mut valenced) = (0, 0);
    for r in &data {
        let text = r[r.len() - 1];
        let reading = emotion::read(text);
        let v = reading.circumplex.valence;
        if reading.discrete.primary.is_some() {
            given += 1;
            println!(
                "{name}	given	{:?} ({:?})	valence {v}	{text}",
                reading.discrete.primary, reading.discrete.basis
            );
        } else if v.abs() >= 0.3 {
            println!("{name}	valence	{v}	{text}");
        }
        valenced += usize::from(v.abs() >= 0.3);
    }
    println!(
        "{name}	given an emotion	{given}/{}	|valence| >= 0.3	{valenced}/{}",
        data.len(),
        data.len()
    );
    (given, valenced, data.len())
}

/// The development sentences without an emotion (`emotion_neutral.tsv`; `emotion_neutral2.tsv`,
/// written for emotion/7, many with a word whose everyday sense is physical): none is given an
/// emotion. Pinned: under emotion/6 the first set gave 4 of 30 an emotion (two by the vote, two
/// by VADER's valence alone) and the second 13 of 30 (three by "blue", ten by the vote).
#[test]
fn emotion_on_sentences_without_one() {
    let sets = super::examples::NEUTRAL_SETS;
    let got = [
        neutral_figures("emotion-none", sets[0]),
        neutral_figures("emotion-none2", sets[1]),
    ];
    assert_eq!(got.map(|(given, _, n)| (given, n)), [(0, 30), (0, 30)]);
}

/// The held-out sentences without an emotion (`emotion_neutral_heldout.tsv`, 30 sentences by a
/// writer who had not read the rules, committed unread before emotion/7 first ran on them):
/// reported, not asserted (docs/cognition.md gives the first run's figures).
#[test]
fn emotion_on_held_out_sentences_without_one_reported() {
    let (_, _, n) = neutral_figures(
        "emotion-none-heldout",
        include_str!("../../../tests/cognition/emotion_neutral_heldout.tsv"),
    );
    assert_eq!(n, 30);
}

/// How the number of voting examples was chosen (docs/cognition.md): on the fifth and sixth
/// held-out sets, each left out of the examples in turn, the share of the sentences the rules
/// read no emotion word or cue in whose vote names their emotion, for k = 3, 5, 7, 9, 11.
#[test]
fn examples_k_chosen_with_each_held_out_set_left_out_reported() {
    let sets = EMOTION_SETS;
    let mut figures = Vec::new();
    for k in [3, 5, 7, 9, 11] {
        let mut line = Vec::new();
        for left_out in [5, 6] {
            let pool: Vec<&str> = sets
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != left_out)
                .map(|(_, s)| *s)
                .collect();
            let examples = Examples::new(&labelled(&pool));
            let (mut right, mut n) = (0, 0);
            for r in rows(sets[left_out]) {
                if emotion::read(r[2]).matched > 0 {
                    continue;
                }
                n += 1;
                let top = examples.vote_of(r[2], k).and_then(|v| v.top());
                right += usize::from(top.is_some_and(|(label, _)| label == r[0]));
            }
            line.push((right, n));
        }
        println!(
            "examples\tk={k}\tfifth set left out {:?}\tsixth {:?}",
            line[0], line[1]
        );
        figures.push((k, line));
    }
    assert!(figures.iter().all(|(_, l)| l[0].1 > 0 && l[1].1 > 0));
}
