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
            (r[0].to_owned(), got.as_deref() == Some(r[0]))
        })
        .collect();
    let t = tally(&results);
    assert_eq!(t.len(), 11, "all eleven emotions are labelled");
    let (right, total) = print("emotion", &t);
    assert!(right * 4 >= total * 3, "{right}/{total}");
}

#[test]
fn emotion_held_out() {
    let data = rows(include_str!("../../../tests/cognition/emotion_heldout.tsv"));
    let mut right = 0;
    let mut wrong_sign = Vec::new();
    for r in &data {
        let reading = emotion::read(r[2]);
        let ok = reading.discrete.primary.as_deref() == Some(r[0]);
        right += usize::from(ok);
        let v = reading.circumplex.valence;
        println!(
            "heldout\t{}\t{:?}\t{ok}\tvalence {v}",
            r[0], reading.discrete.primary
        );
        if (r[1] == "+" && v <= 0.0) || (r[1] == "-" && v >= 0.0) {
            wrong_sign.push(r[2]);
        }
    }
    println!("heldout\tprimary\t{right}/{}", data.len());
    println!("heldout\twrong valence sign\t{wrong_sign:?}");
    assert!(
        wrong_sign.is_empty(),
        "valence sign wrong for {wrong_sign:?}"
    );
    assert!(right * 4 >= data.len() * 3, "{right}/{}", data.len());
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

#[test]
fn bias_held_out() {
    let data = rows(include_str!("../../../tests/cognition/bias_heldout.tsv"));
    let mut right = 0;
    for r in &data {
        let found = bias::detect(r[1]);
        let ok = found.iter().any(|f| f.kind == r[0]);
        println!(
            "heldout\t{}\t{ok}\t{:?}",
            r[0],
            found.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>()
        );
        right += usize::from(ok);
    }
    println!("heldout\tbias\t{right}/{}", data.len());
    assert!(right >= 6, "{right}/8");
}
