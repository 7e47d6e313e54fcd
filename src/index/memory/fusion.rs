//! Fusion: the BM25 score and the vector cosine of each candidate made into one similarity in
//! [0, 1]. Pure and deterministic: the same candidates give the same similarities bit for bit
//! (a fixed order of operations in f64 over the f32 inputs), so the method and its weights,
//! recorded with a retrieval's provenance, are all replay needs to reproduce it.
//!
//! The candidates of one query are the union of the owner's top `C` memories by BM25 and top `C`
//! by cosine (`C` = max(limit, [`CANDIDATES`](super::CANDIDATES))). A candidate outside the BM25
//! list counts BM25 0; every candidate's cosine is exact (each memory's vector is at hand).
//!
//! [`Fusion::Weighted`] (the default, 0.5 and 0.5 with the clamped cosine, see [`Fusion::DEFAULT`]):
//! `similarity = text_weight × bm25 / max_bm25 + vector_weight × cos'`, where `max_bm25` is the
//! best BM25 among the candidates (BM25 is unbounded; dividing by the best makes the top lexical
//! match 1 and keeps ratios), and `cos'` is the cosine clamped to [0, 1]
//! ([`CosineScaling::Clamped`]) or min-max scaled over the candidates
//! ([`CosineScaling::MinMax`]). The weights are non-negative and sum to 1, so the similarity
//! is in [0, 1]. When the query has no text hits the BM25 term is 0; without a query vector the
//! cosine term is 0.
//!
//! [`Fusion::ReciprocalRank`]: `Σ 1 / (k + rank)` over the lists a candidate is in (rank from
//! 1), divided by its largest possible value (`lists / (k + 1)`), so again in [0, 1].

/// How the two signals become one similarity. See the module doc for the formulas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// A weighted sum of the max-scaled BM25 and the scaled cosine.
    Weighted {
        /// Weight of BM25 / best BM25.
        text_weight: f64,
        /// Weight of the scaled cosine; `text_weight + vector_weight == 1`.
        vector_weight: f64,
        /// How the cosine is brought into [0, 1].
        cosine: CosineScaling,
    },
    /// Reciprocal rank fusion with constant `k`.
    ReciprocalRank {
        /// The rank offset (60 in the RRF paper).
        k: u32,
    },
}

/// How a cosine in [-1, 1] becomes a value in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CosineScaling {
    /// `max(cos, 0)`: the raw cosine, negatives as 0.
    Clamped,
    /// `(cos − min) / (max − min)` over the query's candidates (1 when all are equal).
    MinMax,
}

impl Fusion {
    /// The default, the best measured on the tuning half of LoCoMo-10 (docs/benchmarks.md):
    /// 0.5 × BM25 / best + 0.5 × clamped cosine.
    pub const DEFAULT: Fusion = Fusion::Weighted {
        text_weight: 0.5,
        vector_weight: 0.5,
        cosine: CosineScaling::Clamped,
    };

    /// A weighted fusion giving `text_weight` to BM25 and the rest to the cosine; `None` unless
    /// `text_weight` is in [0, 1].
    pub fn weighted(text_weight: f64, cosine: CosineScaling) -> Option<Fusion> {
        (0.0..=1.0)
            .contains(&text_weight)
            .then_some(Fusion::Weighted {
                text_weight,
                vector_weight: 1.0 - text_weight,
                cosine,
            })
    }
}

impl std::fmt::Display for Fusion {
    /// The formula, as a retrieval's provenance records it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fusion::Weighted {
                text_weight,
                vector_weight,
                cosine,
            } => {
                let cos = match cosine {
                    CosineScaling::Clamped => "max(cosine, 0)",
                    CosineScaling::MinMax => "minmax(cosine)",
                };
                write!(f, "{text_weight}·bm25/best + {vector_weight}·{cos}")
            }
            Fusion::ReciprocalRank { k } => write!(f, "reciprocal rank fusion, k = {k}"),
        }
    }
}

/// One candidate's signals: its BM25 score and 1-based rank if it is in the BM25 list, its
/// cosine and 1-based rank if it is in the vector list (or its cosine alone otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct Signals {
    pub(super) bm25: Option<(f32, usize)>,
    pub(super) cosine: Option<f32>,
    pub(super) cosine_rank: Option<usize>,
}

/// The similarity of each candidate, in the order given.
pub(super) fn fuse(fusion: Fusion, candidates: &[Signals]) -> Vec<f64> {
    match fusion {
        Fusion::Weighted {
            text_weight,
            vector_weight,
            cosine,
        } => {
            let best_bm25 = candidates
                .iter()
                .filter_map(|c| c.bm25.map(|(s, _)| f64::from(s)))
                .fold(0.0_f64, f64::max);
            let cosines = candidates.iter().filter_map(|c| c.cosine.map(f64::from));
            let (lo, hi) = cosines.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
                (lo.min(c), hi.max(c))
            });
            candidates
                .iter()
                .map(|c| {
                    let text = match c.bm25 {
                        Some((s, _)) if best_bm25 > 0.0 => f64::from(s) / best_bm25,
                        _ => 0.0,
                    };
                    let vector = match (c.cosine.map(f64::from), cosine) {
                        (None, _) => 0.0,
                        (Some(x), CosineScaling::Clamped) => x.clamp(0.0, 1.0),
                        (Some(_), CosineScaling::MinMax) if hi <= lo => 1.0,
                        (Some(x), CosineScaling::MinMax) => (x - lo) / (hi - lo),
                    };
                    (text_weight * text + vector_weight * vector).clamp(0.0, 1.0)
                })
                .collect()
        }
        Fusion::ReciprocalRank { k } => {
            let k = f64::from(k);
            let lists = usize::from(candidates.iter().any(|c| c.bm25.is_some()))
                + usize::from(candidates.iter().any(|c| c.cosine_rank.is_some()));
            let best = lists_f64(lists) / (k + 1.0);
            candidates
                .iter()
                .map(|c| {
                    let part = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (k + lists_f64(r)));
                    let sum = part(c.bm25.map(|(_, r)| r)) + part(c.cosine_rank);
                    if best > 0.0 {
                        (sum / best).clamp(0.0, 1.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        }
    }
}

/// A small count as f64 (exact below 2^53).
fn lists_f64(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::MAX, f64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Signals> {
        vec![
            Signals {
                bm25: Some((7.25, 1)),
                cosine: Some(0.41),
                cosine_rank: Some(3),
            },
            Signals {
                bm25: Some((3.5, 2)),
                cosine: Some(0.83),
                cosine_rank: Some(1),
            },
            Signals {
                bm25: None,
                cosine: Some(0.62),
                cosine_rank: Some(2),
            },
        ]
    }

    #[test]
    fn weighted_max_scales_bm25_and_min_max_scales_cosine() {
        let s = fuse(
            Fusion::weighted(0.7, CosineScaling::MinMax).expect("valid weight"),
            &sample(),
        );
        // 0.7 × 7.25/7.25 + 0.3 × (0.41 − 0.41)/(0.83 − 0.41)
        assert!((s[0] - 0.7).abs() < 1e-12, "{s:?}");
        // 0.7 × 3.5/7.25 + 0.3 × 1
        assert!((s[1] - (0.7 * 3.5 / 7.25 + 0.3)).abs() < 1e-12, "{s:?}");
        assert!(s.iter().all(|x| (0.0..=1.0).contains(x)));
        let clamped = fuse(
            Fusion::weighted(0.5, CosineScaling::Clamped).expect("valid weight"),
            &sample(),
        );
        assert!((clamped[2] - 0.5 * f64::from(0.62_f32)).abs() < 1e-12);
    }

    #[test]
    fn reciprocal_rank_is_normalized_to_one_for_first_in_both_lists() {
        let one = [Signals {
            bm25: Some((1.0, 1)),
            cosine: Some(0.5),
            cosine_rank: Some(1),
        }];
        assert_eq!(fuse(Fusion::ReciprocalRank { k: 60 }, &one), vec![1.0]);
        let s = fuse(Fusion::ReciprocalRank { k: 60 }, &sample());
        assert!(s[1] > s[0] && s[0] > s[2], "{s:?}");
    }

    #[test]
    fn fusion_is_deterministic_bit_for_bit() {
        let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        for f in [
            Fusion::DEFAULT,
            Fusion::ReciprocalRank { k: 60 },
            Fusion::weighted(0.25, CosineScaling::Clamped).expect("valid weight"),
        ] {
            assert_eq!(bits(fuse(f, &sample())), bits(fuse(f, &sample())));
        }
        assert!(Fusion::weighted(1.5, CosineScaling::Clamped).is_none());
    }
}
