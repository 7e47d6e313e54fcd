//! The evaluation of `analyze_reasoning`'s rules on the labelled passages in
//! `tests/cognition/reasoning*.tsv`: per fallacy type, how many passages get a finding of their
//! type; false alarms on sound passages and on passages without an argument; how many of the
//! latter are left unassessed; and the ordering — of the (sound, fallacious) pairs, the share
//! where the sound passage scores higher (the mean of the four quality measures; a pair with an
//! unassessed passage counts 0.5, a tie 0) — for argument/2, features/2 and features/1. The
//! figures are printed (`--nocapture`) and reported in docs/cognition.md; floors are asserted
//! on the development sets only.

// The figures are the point of these tests: they print them.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

use super::argument::{self, Assessment};
use super::features::{self, Quality};
use super::features2;
use super::judgement::FALLACIES;

fn rows(tsv: &str) -> Vec<(String, String)> {
    tsv.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("label\t") && !l.trim().is_empty())
        .filter_map(|l| {
            let (label, text) = l.split_once('\t')?;
            Some((label.to_owned(), text.to_owned()))
        })
        .collect()
}

/// The scores of one rule set for a passage: `None` when it is not assessed.
type Scorer = fn(&str) -> Option<f64>;

fn mean(q: &Quality) -> f64 {
    argument::overall(q)
}

fn features1(text: &str) -> Option<f64> {
    let x = features::count(text, &[], None);
    Some(mean(&features::quality(
        text,
        &x,
        &features::dimensions(&x),
    )))
}

fn features2_score(text: &str) -> Option<f64> {
    let x = features::count(text, &[], None);
    let d = features::dimensions(&x);
    let a = argument::assess(text);
    Some(mean(&features2::quality(text, &x, &d, &a)))
}

fn argument2(text: &str) -> Option<f64> {
    let x = features::count(text, &[], None);
    let d = features::dimensions(&x);
    let a = argument::assess(text);
    a.assessed
        .then(|| mean(&argument::quality(text, &x, &d, &a)))
}

/// (pairs where sound scores higher, counting an unassessed pair 0.5) and the pairs.
fn ordering(data: &[(String, String)], score: Scorer) -> (f64, usize) {
    let sound: Vec<Option<f64>> = data
        .iter()
        .filter(|(l, _)| l == "sound")
        .map(|(_, t)| score(t))
        .collect();
    let fallacious: Vec<Option<f64>> = data
        .iter()
        .filter(|(l, _)| FALLACIES.contains(&l.as_str()))
        .map(|(_, t)| score(t))
        .collect();
    let mut won = 0.0;
    for s in &sound {
        for f in &fallacious {
            won += match (s, f) {
                (Some(s), Some(f)) if s > f => 1.0,
                (Some(_), Some(_)) => 0.0,
                _ => 0.5,
            };
        }
    }
    (won, sound.len() * fallacious.len())
}

/// One set's figures.
#[derive(Debug, Default)]
struct Figures {
    /// Per fallacy type: (found, passages).
    recall: BTreeMap<String, (usize, usize)>,
    false_alarms_sound: (usize, usize),
    false_alarms_none: (usize, usize),
    unassessed_none: usize,
    unassessed_other: usize,
    order_argument2: (f64, usize),
    order_features2: (f64, usize),
    order_features1: (f64, usize),
}

impl Figures {
    fn found(&self) -> (usize, usize) {
        self.recall
            .values()
            .fold((0, 0), |(r, n), (a, b)| (r + a, n + b))
    }
}

fn figures(name: &str, tsv: &str) -> Figures {
    let data = rows(tsv);
    let mut f = Figures::default();
    for (label, text) in &data {
        let a: Assessment = argument::assess(text);
        let kinds: Vec<&str> = a.findings.iter().map(|x| x.fallacy.label()).collect();
        match label.as_str() {
            "sound" => {
                f.false_alarms_sound.1 += 1;
                f.false_alarms_sound.0 += usize::from(!kinds.is_empty());
                f.unassessed_other += usize::from(!a.assessed);
                if !kinds.is_empty() || !a.assessed {
                    println!("{name}\tsound\t{kinds:?}\tassessed {}\t{text}", a.assessed);
                }
            }
            "no_argument" => {
                f.false_alarms_none.1 += 1;
                f.false_alarms_none.0 += usize::from(!kinds.is_empty());
                f.unassessed_none += usize::from(!a.assessed);
                if a.assessed {
                    println!("{name}\tno_argument assessed\t{kinds:?}\t{text}");
                }
            }
            other => {
                let e = f.recall.entry(other.to_owned()).or_default();
                e.1 += 1;
                let right = kinds.contains(&other);
                e.0 += usize::from(right);
                f.unassessed_other += usize::from(!a.assessed);
                if !right {
                    println!("{name}\tmissed {other}\t{kinds:?}\t{text}");
                }
            }
        }
    }
    f.order_argument2 = ordering(&data, argument2);
    f.order_features2 = ordering(&data, features2_score);
    f.order_features1 = ordering(&data, features1);
    for (label, (r, n)) in &f.recall {
        println!("{name}\t{label}\t{r}/{n}");
    }
    let (r, n) = f.found();
    println!("{name}\tfallacies found\t{r}/{n}");
    println!(
        "{name}\tfalse alarms\tsound {}/{}\tno argument {}/{}",
        f.false_alarms_sound.0,
        f.false_alarms_sound.1,
        f.false_alarms_none.0,
        f.false_alarms_none.1
    );
    println!(
        "{name}\tno-argument passages unassessed\t{}/{}\t(argued passages unassessed: {})",
        f.unassessed_none, f.false_alarms_none.1, f.unassessed_other
    );
    for (rules, (won, pairs)) in [
        ("argument/2", f.order_argument2),
        ("features/2", f.order_features2),
        ("features/1", f.order_features1),
    ] {
        #[allow(clippy::cast_precision_loss)] // pair counts
        let share = 100.0 * won / pairs as f64;
        println!("{name}\tsound above fallacious, {rules}\t{won}/{pairs}\t{share:.0} %");
    }
    f
}

fn assert_floors(f: &Figures, found: usize, ordered: f64) {
    let (r, n) = f.found();
    assert!(r >= found, "fallacies found {r}/{n}");
    assert!(f.false_alarms_sound.0 <= 1, "{:?}", f.false_alarms_sound);
    assert_eq!(f.false_alarms_none.0, 0, "{:?}", f.false_alarms_none);
    assert_eq!(f.unassessed_none, f.false_alarms_none.1);
    assert_eq!(f.unassessed_other, 0);
    #[allow(clippy::cast_precision_loss)] // pair counts
    let share = f.order_argument2.0 / f.order_argument2.1 as f64;
    assert!(share >= ordered, "{:?}", f.order_argument2);
    assert!(f.order_argument2.0 >= f.order_features1.0);
}

#[test]
fn argument_rules_on_the_development_sets() {
    let first = figures(
        "reasoning.tsv",
        include_str!("../../../tests/cognition/reasoning.tsv"),
    );
    assert_floors(&first, 22, 0.9);
    // The first held-out set: development data since its first run (argument/1).
    let second = figures(
        "reasoning_heldout.tsv",
        include_str!("../../../tests/cognition/reasoning_heldout.tsv"),
    );
    assert_floors(&second, 20, 0.85);
    let third = figures(
        "reasoning_dev2.tsv",
        include_str!("../../../tests/cognition/reasoning_dev2.tsv"),
    );
    assert_floors(&third, 28, 0.85);
}

/// The second held-out set, written for argument/2 by someone who had not read the rules and
/// committed after them. Its figures are printed, never asserted: its first run is the
/// measurement docs/cognition.md reports.
#[test]
fn argument_rules_on_the_second_held_out_set_reported() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cognition/reasoning_heldout2.tsv"
    );
    match std::fs::read_to_string(path) {
        Ok(tsv) => {
            figures("reasoning_heldout2.tsv", &tsv);
        }
        Err(_) => println!("reasoning_heldout2.tsv is not there yet"),
    }
}

/// The third held-out set, written by someone who had read neither the rules nor any earlier
/// set and committed before argument/3 was written. argument/3 (branch history: 0242073) was
/// measured on it once and not adopted; these are the shipped rules' figures, printed, never
/// asserted.
#[test]
fn argument_rules_on_the_third_held_out_set_reported() {
    figures(
        "reasoning_heldout3.tsv",
        include_str!("../../../tests/cognition/reasoning_heldout3.tsv"),
    );
}
