//! The evaluation of the emotion and bias rules on the labelled sets in `tests/cognition/`:
//! per-class accuracy on the sets the rules were written against, and the held-out sets'
//! thresholds (primary emotion right for ≥ 3/4, valence sign right on every clearly signed
//! sentence, ≥ 6 of 8 bias types recognised). The figures are printed (`--nocapture`) and
//! reported in docs/cognition.md.

// The figures are the point of these tests: they print them.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

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

/// The thresholds on the fifth held-out set (written after the emotion/5 rules,
/// committed before its first run): primary emotion right for ≥ 3/4, valence sign right on
/// every clearly signed sentence. Not met at its first run (8/26 primary, 11/24 signs, under
/// emotion/5; the fourth set's first run, under emotion/4, was 16/26 and 20/24;
/// docs/cognition.md): issue 13 stays open until a fresh held-out set passes. Run it with
/// `--ignored`.
#[test]
#[ignore = "issue 13: the held-out emotion thresholds are not met yet (docs/cognition.md)"]
fn emotion_held_out() {
    let (right, total, wrong_sign) = emotion_figures(
        "heldout5",
        include_str!("../../../tests/cognition/emotion_heldout5.tsv"),
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
            12,
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
    ];
    for (name, tsv, right, total, wrong) in sets {
        let (r, t, w) = emotion_figures(name, tsv);
        assert_eq!((r, t, w.len()), (right, total, wrong), "{name}");
    }
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

/// The threshold on the fifth held-out set (written under the bias/4 rules, unchanged
/// since the fourth set, committed before its first run): at least six of the eight types
/// recognised from one plain example each. Met on the fourth set's first run (7/8), not on the
/// fifth's (2/8) under the same rules (docs/cognition.md): not met reliably. Run it with
/// `--ignored`.
#[test]
#[ignore = "issue 13: the held-out bias threshold is not met reliably (docs/cognition.md)"]
fn bias_held_out() {
    let (right, total) = bias_figures(
        "heldout5",
        include_str!("../../../tests/cognition/bias_heldout5.tsv"),
    );
    assert_eq!(total, 8, "one example per type");
    assert!(right >= 6, "{right}/8");
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
    ];
    for (name, tsv, right, total) in sets {
        assert_eq!(bias_figures(name, tsv), (right, total), "{name}");
    }
}
