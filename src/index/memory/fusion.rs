//! Fusion: the BM25 score and the vector cosine of each candidate made into one similarity in
//! [0, 1]. Pure and deterministic: the same candidates give the same similarities bit for bit
//! (a fixed order of operations in f64 over the f32 inputs), so the method and its weights,
//! recorded with a retrieval's provenance, are all replay needs to reproduce it.
//!
//! The candidates of one query are the union of the owner's top `C` memories by BM25 and top `C`
//! by cosine (`C` = max(limit, [`CANDIDATES`](super::CANDIDATES))). A candidate outside the BM25
//! list counts BM25 0; every candidate's cosine is exact (each memory's vector is at hand).
//!
//! [`Fusion::Weighted`] (the default: 0.4 and 0.6 with the clamped cosine and context 0.5, see
//! [`Fusion::DEFAULT`]):
//! `similarity = text_weight × bm25 / max_bm25 + vector_weight × cos'`, where `max_bm25` is the
//! best BM25 among the candidates (BM25 is unbounded; dividing by the best makes the top lexical
//! match 1 and keeps ratios), and `cos'` is the cosine clamped to [0, 1]
//! ([`CosineScaling::Clamped`]) or min-max scaled over the candidates
//! ([`CosineScaling::MinMax`]). The weights are non-negative and sum to 1, so the similarity
//! is in [0, 1]. When the query has no text hits the BM25 term is 0; without a query vector the
//! cosine term is 0.
//!
//! A weighted fusion may also give each memory part of its session neighbours' similarity
//! (`context` > 0; see `episodes`): `(s + context × max(s of its neighbours)) / (1 + context)`,
//! where `s` is the weighted sum above and a neighbour's `s` counts its BM25 when it is among
//! BM25's top `C` and its exact cosine always. The neighbours of every candidate become
//! candidates too. Dividing by `1 + context` keeps the similarity in [0, 1].
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
        /// The share of the best session neighbour's similarity a memory adds (0: none).
        context: f64,
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
    /// 0.4 × BM25 / best + 0.6 × clamped cosine, plus half the best session neighbour's.
    pub const DEFAULT: Fusion = Fusion::Weighted {
        text_weight: 0.4,
        vector_weight: 0.6,
        cosine: CosineScaling::Clamped,
        context: 0.5,
    };

    /// A weighted fusion giving `text_weight` to BM25 and the rest to the cosine, without
    /// neighbours; `None` unless `text_weight` is in [0, 1].
    pub fn weighted(text_weight: f64, cosine: CosineScaling) -> Option<Fusion> {
        (0.0..=1.0)
            .contains(&text_weight)
            .then_some(Fusion::Weighted {
                text_weight,
                vector_weight: 1.0 - text_weight,
                cosine,
                context: 0.0,
            })
    }

    /// This weighted fusion with `context` of the best session neighbour's similarity added;
    /// `None` for rank fusion or unless `context` is finite and ≥ 0.
    pub fn with_context(self, context: f64) -> Option<Fusion> {
        match self {
            Fusion::Weighted {
                text_weight,
                vector_weight,
                cosine,
                ..
            } if context.is_finite() && context >= 0.0 => Some(Fusion::Weighted {
                text_weight,
                vector_weight,
                cosine,
                context,
            }),
            _ => None,
        }
    }

    /// The share of the best neighbour's similarity a memory adds (0 for rank fusion).
    pub fn context(self) -> f64 {
        match self {
            Fusion::Weighted { context, .. } => context,
            Fusion::ReciprocalRank { .. } => 0.0,
        }
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
                context,
            } => {
                let cos = match cosine {
                    CosineScaling::Clamped => "max(cosine, 0)",
                    CosineScaling::MinMax => "minmax(cosine)",
                };
                write!(f, "{text_weight}·bm25/best + {vector_weight}·{cos}")?;
                if *context > 0.0 {
                    write!(
                        f,
                        ", plus {context}× the best same-session neighbour's, over {}",
                        1.0 + context
                    )?;
                }
                Ok(())
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
            ..
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

/// Each memory's similarity with `context` of its best neighbour's added (see the module doc):
/// `own[i]` its own, `neighbours[i]` the indexes of its neighbours in `own`.
pub(super) fn with_neighbours(
    own: &[f64],
    neighbours: &[[Option<usize>; 2]],
    context: f64,
) -> Vec<f64> {
    own.iter()
        .zip(neighbours)
        .map(|(s, n)| {
            let best = n.iter().flatten().map(|&j| own[j]).fold(0.0_f64, f64::max);
            ((s + context * best) / (1.0 + context)).clamp(0.0, 1.0)
        })
        .collect()
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

    #[test]
    fn a_neighbour_lends_its_share_and_the_result_stays_in_unit_range() {
        let own = [0.9, 0.2, 0.4, 1.0];
        // 1 sits between 0 and 2; 3 has no neighbours.
        let n = [
            [None, Some(1)],
            [Some(0), Some(2)],
            [Some(1), None],
            [None, None],
        ];
        let s = with_neighbours(&own, &n, 0.5);
        assert!((s[1] - (0.2 + 0.5 * 0.9) / 1.5).abs() < 1e-12, "{s:?}");
        assert!((s[0] - (0.9 + 0.5 * 0.2) / 1.5).abs() < 1e-12, "{s:?}");
        assert!((s[3] - 1.0 / 1.5).abs() < 1e-12, "{s:?}");
        assert_eq!(with_neighbours(&own, &n, 0.0), own.to_vec());
        assert!(Fusion::DEFAULT.with_context(-0.1).is_none());
        assert!(Fusion::ReciprocalRank { k: 60 }.with_context(0.5).is_none());
        assert_eq!(Fusion::DEFAULT.context(), 0.5);
        assert!(Fusion::DEFAULT.to_string().contains("neighbour"));
        let plain = Fusion::weighted(0.5, CosineScaling::Clamped).expect("valid weight");
        assert_eq!(plain.to_string(), "0.5·bm25/best + 0.5·max(cosine, 0)");
    }
}
