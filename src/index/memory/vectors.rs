//! The vector half of the memory index: per owner, one unit vector per memory, searched by exact
//! cosine (a dot product over unit vectors, in a fixed order, so equal inputs give equal bits).
//!
//! Exact search is linear in the owner's memories, and at 100,000 memories of 64 dimensions the
//! scan of 25.6 MB of floats is bound by memory bandwidth. So each row also keeps a copy
//! quantized to 16-bit integers (its own scale; at most ±4095, less for long vectors, so that
//! the products of a row sum in an `i32`: [`code_max`]), half the bytes: the scan computes every
//! row's approximate cosine from them (an exact integer dot product, in AVX2 when the CPU has
//! it) with a bound on its error, and only the rows that could be among the best `k` (whose
//! upper bound reaches the `k`-th best lower bound) get their exact cosine, computed from the
//! floats as before. The answer is the exact one, bit for bit and in the same order (cosine, then id): a
//! row of the exact best `k` always passes the bound (a test compares with the plain scan).
//!
//! The bound, for unit vectors `q` (query) and `v` (row), codes `c` with steps `s` (the largest
//! component over [`code_max`]): each component is off by at most one step, so
//! `|q·v − s_q·s_v·Σ c_q c_v| ≤ s_v·‖q‖₁ + s_q·(‖v‖₁ + n·s_v)`, plus `n · 2⁻²²` for the
//! rounding of the float sums (each at most `n · 2⁻²⁴` off for unit vectors).
//!
//! Every owner's vectors share one model: a vector of another model or dimension is refused,
//! both when stored and when queried, instead of being compared meaninglessly.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use crate::embed::Embedding;

use super::IndexError;

/// Slack for the rounding of float sums in the bound, for vectors of `n` components (see the
/// module doc): four times the `n · 2⁻²⁴` a sum of `n` products of unit vectors can be off by.
fn rounding_slack(n: f64) -> f64 {
    n * f64::powi(2.0, -22)
}

/// The largest code for vectors of `dimension` components: 4095, or less, so that `dimension`
/// products of two codes sum to at most `i32::MAX` (64 · 4095² < 2³¹; 384 dimensions: 2364).
fn code_max(dimension: usize) -> f32 {
    let n = f64::from(u32::try_from(dimension.max(1)).unwrap_or(u32::MAX));
    let most = (f64::from(i32::MAX) / n).sqrt().floor().min(4095.0);
    // At most 4095 (and at least 1 for any dimension that fits memory): exact in f32.
    #[allow(clippy::cast_possible_truncation)]
    let most = most.max(1.0) as f32;
    most
}

/// One owner's vectors.
#[derive(Debug, Default)]
struct OwnerVectors {
    /// The model every vector here came from (set by the first one).
    model: Option<Arc<str>>,
    /// Their dimension.
    dimension: usize,
    /// Memory ids, row by row.
    ids: Vec<String>,
    /// Row-major unit vectors, `ids.len() * dimension` floats: the exact cosines.
    rows: Vec<f32>,
    /// Row-major integer codes of the same vectors: the scan's approximate cosines.
    codes: Vec<i16>,
    /// Per row: the value of one code step, and the row's ‖v‖₁ (for the error bound).
    scales: Vec<(f32, f32)>,
    /// Row of each id.
    row_of: HashMap<String, usize>,
}

/// Vectors of every owner, in memory (rebuilt with the rest of the index from the log).
#[derive(Debug, Default)]
pub(super) struct VectorStore {
    owners: HashMap<String, OwnerVectors>,
}

/// `v` scaled to unit length (a zero vector stays zero: it matches nothing).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

/// The exact cosine of two unit vectors (the order of operations is part of the answer).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A vector's integer codes, the value of one step and its ‖v‖₁.
struct Quantized {
    codes: Vec<i16>,
    step: f32,
    l1: f32,
}

fn quantize(v: &[f32]) -> Quantized {
    let code_max = code_max(v.len());
    let largest = v.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    let l1 = v.iter().map(|x| x.abs()).sum::<f32>();
    if !(largest > 0.0 && largest.is_finite()) {
        return Quantized {
            codes: vec![0; v.len()],
            step: 0.0,
            l1,
        };
    }
    let step = largest / code_max;
    let codes = v
        .iter()
        .map(|x| {
            let c = (x / step).round().clamp(-code_max, code_max);
            // An integer in [-4095, 4095] after the clamp: the conversion is exact.
            #[allow(clippy::cast_possible_truncation)]
            let code = c as i16;
            code
        })
        .collect();
    Quantized { codes, step, l1 }
}

/// The exact integer dot product of two code rows (in eight lanes, which the compiler turns
/// into vector instructions; integer sums do not depend on their order): the portable path of
/// [`code_dots`].
fn code_dot(a: &[i16], b: &[i16]) -> i32 {
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    let mut lanes = [0_i32; 8];
    for (x, y) in a8.iter().zip(b8) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += i32::from(*x) * i32::from(*y);
        }
    }
    let rest: i32 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    lanes.iter().sum::<i32>() + rest
}

/// Each row's [`code_dot`] with `q` into `out` (one per row of `codes`): with AVX2 when the
/// CPU has it (sixteen products a step, chosen at run time), else the portable loop. The same
/// integers either way.
fn code_dots(codes: &[i16], q: &[i16], out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        simd.vectorize(Avx2Dots {
            simd,
            codes,
            q,
            out,
        });
        return;
    }
    let d = q.len();
    for (row, dot) in out.iter_mut().enumerate() {
        *dot = code_dot(&codes[row * d..(row + 1) * d], q);
    }
}

/// [`code_dots`] in AVX2: `vpmaddwd` multiplies sixteen code pairs and adds neighbours into
/// eight `i32` lanes (exact: two products of codes of at most 4095 fit), lanes summed at the
/// end of each row.
#[cfg(target_arch = "x86_64")]
struct Avx2Dots<'a> {
    simd: pulp::x86::V3,
    codes: &'a [i16],
    q: &'a [i16],
    out: &'a mut [i32],
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Avx2Dots<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        use core::arch::x86_64::__m256i;
        const LANES: usize = 16;
        let Self {
            simd,
            codes,
            q,
            out,
        } = self;
        let d = q.len();
        let whole = d - d % LANES;
        let steps: Vec<__m256i> = q[..whole]
            .chunks_exact(LANES)
            .map(|c| pulp::cast(<[i16; LANES]>::try_from(c).unwrap_or([0; LANES])))
            .collect();
        for (row, dot) in out.iter_mut().enumerate() {
            let codes = &codes[row * d..(row + 1) * d];
            let mut sum: __m256i = pulp::cast([0_i32; 8]);
            for (chunk, step) in codes[..whole].chunks_exact(LANES).zip(&steps) {
                let chunk: __m256i =
                    pulp::cast(<[i16; LANES]>::try_from(chunk).unwrap_or([0; LANES]));
                sum = simd
                    .avx2
                    ._mm256_add_epi32(sum, simd.avx2._mm256_madd_epi16(chunk, *step));
            }
            let lanes: [i32; 8] = pulp::cast(sum);
            let rest: i32 = codes[whole..]
                .iter()
                .zip(&q[whole..])
                .map(|(x, y)| i32::from(*x) * i32::from(*y))
                .sum();
            *dot = lanes.iter().sum::<i32>() + rest;
        }
    }
}

thread_local! {
    /// Each thread's scan buffers (dot products, upper bounds), reused from query to query.
    static SCAN: std::cell::RefCell<(Vec<i32>, Vec<f64>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

/// A candidate of a scan: ordered worst first, so a max-heap of them pops the worst (lower
/// cosine, or the same cosine and a later id).
struct Candidate<'a> {
    cosine: f32,
    row: usize,
    id: &'a str,
}

impl Ord for Candidate<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .cosine
            .total_cmp(&self.cosine)
            .then_with(|| self.id.cmp(other.id))
    }
}

impl PartialOrd for Candidate<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate<'_> {}

impl OwnerVectors {
    fn check(&self, e: &Embedding) -> Result<(), IndexError> {
        match &self.model {
            Some(model) if **model != *e.model() || self.dimension != e.dimension() => {
                Err(IndexError::ModelMismatch {
                    stored: format!("{model} ({} dimensions)", self.dimension),
                    given: format!("{} ({} dimensions)", e.model(), e.dimension()),
                })
            }
            _ => Ok(()),
        }
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.rows[i * self.dimension..(i + 1) * self.dimension]
    }

    fn set_row(&mut self, i: usize, v: &[f32]) {
        let d = self.dimension;
        let q = quantize(v);
        self.rows[i * d..(i + 1) * d].copy_from_slice(v);
        self.codes[i * d..(i + 1) * d].copy_from_slice(&q.codes);
        self.scales[i] = (q.step, q.l1);
    }

    /// The rows that may be among the `k` of highest cosine with the unit vector `q` (a
    /// superset of them, see the module doc).
    fn candidates(&self, q: &[f32], k: usize) -> Vec<usize> {
        let d = self.dimension;
        let Quantized {
            codes: q_codes,
            step: q_step,
            l1: q_l1,
        } = quantize(q);
        let (q_step, q_l1) = (f64::from(q_step), f64::from(q_l1));
        let n = f64::from(u32::try_from(d).unwrap_or(u32::MAX));
        if d == 0 {
            return (0..self.ids.len()).collect();
        }
        // First every row's integer dot product (a tight loop over the codes), then each row's
        // bounds and the `k` best lower bounds so far (a short sorted list, rarely touched),
        // then the rows whose upper bound reaches the `k`-th best lower bound.
        let rows = self.ids.len();
        let slack = rounding_slack(n);
        SCAN.with_borrow_mut(|(dots, highs)| {
            dots.clear();
            dots.resize(rows, 0);
            highs.clear();
            highs.reserve(rows);
            code_dots(&self.codes, &q_codes, dots);
            // The best `k` lower bounds, highest first.
            let mut best: Vec<f64> = Vec::with_capacity(k + 1);
            for (&dot, &(step, l1)) in dots.iter().zip(&self.scales) {
                let step = f64::from(step);
                let approx = step * q_step * f64::from(dot);
                let error = step * q_l1 + q_step * (f64::from(l1) + n * step) + slack;
                let low = approx - error;
                highs.push(approx + error);
                if k > 0 && (best.len() < k || best.last().is_some_and(|&last| low > last)) {
                    let at = best.partition_point(|&b| b >= low);
                    best.insert(at, low);
                    best.truncate(k);
                }
            }
            let floor = if k > 0 && best.len() == k {
                best[k - 1]
            } else {
                f64::NEG_INFINITY
            };
            highs
                .iter()
                .enumerate()
                .filter(|&(_, &high)| high >= floor)
                .map(|(row, _)| row)
                .collect()
        })
    }
}

impl VectorStore {
    /// Stores (or replaces) the vector of `owner`'s memory `id`.
    pub(super) fn upsert(
        &mut self,
        owner: &str,
        id: &str,
        e: &Embedding,
    ) -> Result<(), IndexError> {
        let o = self.owners.entry(owner.to_owned()).or_default();
        o.check(e)?;
        if o.model.is_none() {
            o.model = Some(Arc::clone(e.model_arc()));
            o.dimension = e.dimension();
        }
        let v = unit(e.vector());
        let row = match o.row_of.get(id) {
            Some(&row) => row,
            None => {
                let row = o.ids.len();
                o.rows.resize(o.rows.len() + o.dimension, 0.0);
                o.codes.resize(o.codes.len() + o.dimension, 0);
                o.scales.push((0.0, 0.0));
                o.row_of.insert(id.to_owned(), row);
                o.ids.push(id.to_owned());
                row
            }
        };
        o.set_row(row, &v);
        Ok(())
    }

    /// Removes `owner`'s memory `id`; true if it was there.
    pub(super) fn remove(&mut self, owner: &str, id: &str) -> bool {
        let Some(o) = self.owners.get_mut(owner) else {
            return false;
        };
        let Some(row) = o.row_of.remove(id) else {
            return false;
        };
        let Some(last) = o.ids.len().checked_sub(1) else {
            return false;
        };
        let d = o.dimension;
        if row != last {
            o.rows.copy_within(last * d..(last + 1) * d, row * d);
            o.codes.copy_within(last * d..(last + 1) * d, row * d);
            o.scales[row] = o.scales[last];
            o.ids.swap(row, last);
            o.row_of.insert(o.ids[row].clone(), row);
        }
        o.ids.pop();
        o.rows.truncate(last * d);
        o.codes.truncate(last * d);
        o.scales.truncate(last);
        true
    }

    /// The owner's `limit` memories nearest to `query` by cosine, best first, ties by id.
    pub(super) fn nearest(
        &self,
        owner: &str,
        query: &Embedding,
        limit: usize,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        let Some(o) = self.owners.get(owner) else {
            return Ok(Vec::new());
        };
        o.check(query)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let q = unit(query.vector());
        let mut best: BinaryHeap<Candidate<'_>> = BinaryHeap::with_capacity(limit + 1);
        for row in o.candidates(&q, limit) {
            let candidate = Candidate {
                cosine: dot(o.row(row), &q),
                row,
                id: &o.ids[row],
            };
            if best.len() < limit {
                best.push(candidate);
            } else if let Some(mut worst) = best.peek_mut()
                && candidate < *worst
            {
                *worst = candidate;
            }
        }
        Ok(best
            .into_sorted_vec()
            .into_iter()
            .map(|c| (o.ids[c.row].clone(), c.cosine))
            .collect())
    }

    /// The cosine of each of `owner`'s memories `ids` with `query` (`None` for one without a
    /// vector), in the order given.
    pub(super) fn cosines(
        &self,
        owner: &str,
        ids: &[&str],
        query: &Embedding,
    ) -> Result<Vec<Option<f32>>, IndexError> {
        let Some(o) = self.owners.get(owner) else {
            return Ok(vec![None; ids.len()]);
        };
        o.check(query)?;
        let q = unit(query.vector());
        Ok(ids
            .iter()
            .map(|id| o.row_of.get(*id).map(|&row| dot(o.row(row), &q)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cosine as the scan computed it row by row before the two passes.
    fn reference_dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn vector(seed: u64, dimension: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..dimension)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let x = u16::try_from(state >> 48).unwrap_or(0);
                f32::from(x) / 65535.0 - 0.5
            })
            .collect()
    }

    /// The run-time choice of instructions gives the portable loop's integers, at the codes'
    /// extremes and for dimensions that are not multiples of the vector width.
    #[test]
    fn every_path_of_the_integer_scan_gives_the_same_dot_products() {
        for d in [1_usize, 7, 16, 31, 64, 100, 384] {
            let most = code_max(d) as i16;
            let rows = 37;
            let codes: Vec<i16> = (0..rows * d)
                .map(|i| match i % 5 {
                    0 => most,
                    1 => -most,
                    _ => (vector(i as u64, 1)[0] * 2.0 * f32::from(most)) as i16,
                })
                .collect();
            let q: Vec<i16> = (0..d)
                .map(|i| if i % 3 == 0 { -most } else { most })
                .collect();
            let mut fast = vec![0; rows];
            code_dots(&codes, &q, &mut fast);
            let plain: Vec<i32> = codes.chunks_exact(d).map(|row| code_dot(row, &q)).collect();
            assert_eq!(fast, plain, "dimension {d}");
        }
    }

    fn embedding(v: Vec<f32>) -> Embedding {
        Embedding::new(Arc::from("test/model"), v)
    }

    #[test]
    fn the_two_pass_scan_gives_the_plain_scans_cosines_bit_for_bit() {
        let dimension = 64;
        let mut store = VectorStore::default();
        let mut rows = Vec::new();
        for i in 0..300_u64 {
            // Zero vectors (a signed-zero cosine), exact duplicates (ties broken by id) and
            // near-duplicates (within the bound of each other) too.
            let v = match i % 11 {
                0 => vec![0.0; dimension],
                1 | 2 => vector(7, dimension),
                3 => {
                    let mut v = vector(7, dimension);
                    v[usize::try_from(i).unwrap_or(0) % dimension] += 1e-3;
                    v
                }
                _ => vector(i, dimension),
            };
            let id = format!("m{i:03}");
            store
                .upsert("o", &id, &embedding(v.clone()))
                .expect("stored");
            rows.push((id, unit(&v)));
        }
        // A removal moves the last row into the hole.
        assert!(store.remove("o", "m007"));
        rows.retain(|(id, _)| id != "m007");
        for seed in 0..30 {
            let query = if seed % 5 == 0 {
                vector(7, dimension)
            } else {
                vector(1000 + seed, dimension)
            };
            let q = unit(&query);
            let mut expected: Vec<(String, f32)> = rows
                .iter()
                .map(|(id, v)| (id.clone(), reference_dot(v, &q)))
                .collect();
            expected.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let bits = |v: &[(String, f32)]| {
                v.iter()
                    .map(|(id, c)| (id.clone(), c.to_bits()))
                    .collect::<Vec<_>>()
            };
            for k in [1, 4, 10, 100, rows.len(), rows.len() + 3] {
                let got = store
                    .nearest("o", &embedding(query.clone()), k)
                    .expect("scan");
                let want = &expected[..k.min(expected.len())];
                assert_eq!(bits(&got), bits(want), "k = {k}");
            }
            let ids: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
            let cosines = store
                .cosines("o", &ids, &embedding(query.clone()))
                .expect("cosines");
            for ((id, v), c) in rows.iter().zip(cosines) {
                assert_eq!(
                    c.map(f32::to_bits),
                    Some(reference_dot(v, &q).to_bits()),
                    "{id}"
                );
            }
        }
    }

    #[test]
    fn the_bound_holds_for_every_row() {
        for dimension in [64, 384, 1536] {
            the_bound_holds_at(dimension);
        }
    }

    fn the_bound_holds_at(dimension: usize) {
        let n = f64::from(u32::try_from(dimension).unwrap_or(u32::MAX));
        for seed in 0..200_u64 {
            let v = unit(&vector(seed, dimension));
            let q = unit(&vector(seed + 7919, dimension));
            let (a, b) = (quantize(&v), quantize(&q));
            let (sv, sq) = (f64::from(a.step), f64::from(b.step));
            let approx = sv * sq * f64::from(code_dot(&a.codes, &b.codes));
            let error = sv * f64::from(b.l1) + sq * (f64::from(a.l1) + n * sv) + rounding_slack(n);
            let exact = f64::from(reference_dot(&v, &q));
            assert!(
                (exact - approx).abs() <= error,
                "{seed}: {exact} vs {approx} ± {error}"
            );
        }
    }

    #[test]
    fn ties_are_broken_by_id_and_removal_empties_the_store() {
        let mut store = VectorStore::default();
        for id in ["c", "a", "b"] {
            store
                .upsert("o", id, &embedding(vec![1.0, 0.0]))
                .expect("stored");
        }
        let got = store
            .nearest("o", &embedding(vec![1.0, 0.0]), 2)
            .expect("scan");
        assert_eq!(
            got.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        for id in ["a", "b", "c"] {
            assert!(store.remove("o", id));
        }
        assert!(!store.remove("o", "a"));
        assert!(
            store
                .nearest("o", &embedding(vec![1.0, 0.0]), 5)
                .expect("scan")
                .is_empty()
        );
    }
}
