//! The vector half of the memory index: per owner, one vector per memory, searched by exact
//! cosine (a dot product of unit vectors, in a fixed order, so equal inputs give equal bits).
//!
//! Exact search is linear in the owner's memories, and at 100,000 memories of 64 dimensions a scan
//! of 25.6 MB of floats is bound by memory bandwidth. So each row keeps its vector quantized to
//! 8-bit integers (its own scale; at most ±127, so that `vpmaddubsw`'s pairs of products fit an
//! `i16` and a row's products sum in an `i32`: [`code_max`]), a quarter of the bytes (16-bit codes,
//! with a bound 32 times tighter, made a scan of 100,000 rows 25–35 % slower: it is bound by memory
//! bandwidth, and the looser bound still leaves few rows to the exact check: 19 of 100,000 random
//! vectors for the best 3): the scan computes every row's approximate cosine from them (an exact
//! integer dot product, in AVX2 when the CPU has it) with a bound on its error, and only the rows
//! that could be among the best `k` (whose upper bound reaches the `k`-th best lower bound) get
//! their exact cosine: the float dot product of the row's vector with the unit query, divided by
//! the row's norm (kept per row, so a candidate costs one pass over its floats and one division).
//! The floats are not copied here: a row holds the vector its memory holds (one shared allocation).
//! The answer is the exact one, bit for bit and in the same order (cosine, then id): a row of the
//! exact best `k` always passes the bound (a test compares with the plain scan).
//!
//! The bound, for unit vectors `q` (query) and `v` (row), codes `c` with steps `s` (the largest
//! component over [`code_max`]): each component is off by at most one step, so
//! `|q·v − s_q·s_v·Σ c_q c_v| ≤ s_v·‖q‖₁ + s_q·(‖v‖₁ + n·s_v)`, plus `n · 2⁻²²` for the
//! rounding of the float sums (the exact cosine's dot product, relative to ‖v‖, and its norm
//! are each at most about `n · 2⁻²⁴` off, its division `2⁻²⁴`).
//!
//! Every owner's vectors share one model: a vector of another model or dimension is refused,
//! both when stored and when queried, instead of being compared meaninglessly.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::embed::Embedding;

use super::IndexError;

/// Slack for the rounding of float sums in the bound, for vectors of `n` components (see the
/// module doc): four times the `n · 2⁻²⁴` a sum of `n` products of unit vectors can be off by.
fn rounding_slack(n: f64) -> f64 {
    n * f64::powi(2.0, -22)
}

/// The largest code for vectors of `dimension` components: 127 (two products of codes sum to at
/// most 32,258, which `vpmaddubsw` keeps in an `i16` without saturating), or less, so that
/// `dimension` products of two codes sum to at most `i32::MAX` (up to 133,143 dimensions: 127).
fn code_max(dimension: usize) -> f32 {
    let n = f64::from(u32::try_from(dimension.max(1)).unwrap_or(u32::MAX));
    let most = (f64::from(i32::MAX) / n).sqrt().floor().min(127.0);
    // At most 127 (and at least 1 for any dimension that fits memory): exact in f32.
    #[allow(clippy::cast_possible_truncation)]
    let most = most.max(1.0) as f32;
    most
}

/// Generations of [`Rows`]: unique in the process, so a [`NearestHint`] can never be checked
/// against another owner's rows, or rows rebuilt since.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, AtomicOrdering::Relaxed)
}

/// Rows per [`Chunk`]: what a change copies when a reader still holds the chunk.
const CHUNK_ROWS: usize = 256;

/// Up to [`CHUNK_ROWS`] consecutive rows.
#[derive(Debug, Clone, Default)]
struct Chunk {
    /// Memory ids, row by row.
    ids: Vec<Arc<str>>,
    /// Each row's vector as stored (shared with the memory it came from, not copied).
    vectors: Vec<Arc<[f32]>>,
    /// Each row's Euclidean norm: its exact cosine is `dot(v, q) / norm` ([`Rows::cosine`]).
    norms: Vec<f32>,
    /// Row-major integer codes of the same vectors: the scan's approximate cosines.
    codes: Vec<i8>,
    /// Per row: the value of one code step, and the row's ‖v‖₁ (for the error bound).
    scales: Vec<(f32, f32)>,
}

/// One owner's rows, in chunks shared by copies: a copy costs one pointer per chunk, so a
/// search can take one under the index's lock and scan it after releasing the lock, while the
/// writer goes on changing the rows (a chunk it changes is copied first if a search holds it).
#[derive(Debug, Clone)]
struct Rows {
    /// Changes whenever a row already here is replaced or removed (appending a row keeps it):
    /// rows `0..n` of one generation are the same vectors as long as it lasts.
    generation: u64,
    /// Their dimension.
    dimension: usize,
    len: usize,
    chunks: Vec<Arc<Chunk>>,
}

/// One owner's vectors.
#[derive(Debug)]
struct OwnerVectors {
    /// The model every vector here came from (set by the first one).
    model: Option<Arc<str>>,
    rows: Rows,
    /// Row of each id.
    row_of: HashMap<Arc<str>, usize>,
}

impl Default for OwnerVectors {
    fn default() -> Self {
        Self {
            model: None,
            rows: Rows {
                generation: next_generation(),
                dimension: 0,
                len: 0,
                chunks: Vec::new(),
            },
            row_of: HashMap::new(),
        }
    }
}

/// The nearest rows to a query among an owner's first `rows` rows of one generation, found
/// off the writer ([`RowsToSearch::hint`]): the
/// writer then compares only those and the rows added since, instead of every row
/// ([`VectorStore::nearest_after`]). Never recorded: a decision without it scans every row and
/// reaches the same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearestHint {
    owner: String,
    limit: usize,
    generation: u64,
    rows: usize,
    /// The best `limit` of those rows' ids.
    ids: Vec<Arc<str>>,
}

/// An owner's rows taken from the index for a search after its lock is released
/// ([`VectorStore::rows_for`]).
#[derive(Debug, Clone)]
pub struct RowsToSearch {
    owner: String,
    rows: Rows,
}

/// Vectors of every owner, in memory (rebuilt with the rest of the index from the log).
#[derive(Debug, Default)]
pub(super) struct VectorStore {
    owners: HashMap<String, OwnerVectors>,
}

/// The Euclidean norm of `v`.
fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// `v` scaled to unit length (a zero vector stays zero: it matches nothing).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = norm(v);
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

/// The dot product of two vectors (the order of operations is part of the answer).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A vector's integer codes, the value of one step and its ‖v‖₁.
struct Quantized {
    codes: Vec<i8>,
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
            // An integer in [-127, 127] after the clamp: the conversion is exact.
            #[allow(clippy::cast_possible_truncation)]
            let code = c as i8;
            code
        })
        .collect();
    Quantized { codes, step, l1 }
}

/// The exact integer dot product of two code rows (in eight lanes, which the compiler turns
/// into vector instructions; integer sums do not depend on their order): the portable path of
/// [`code_dots`].
fn code_dot(a: &[i8], b: &[i8]) -> i32 {
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
/// CPU has it (32 products a step, chosen at run time), else the portable loop. The same
/// integers either way.
fn code_dots(codes: &[i8], q: &[i8], out: &mut [i32]) {
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

/// [`code_dots`] in AVX2: `vpmaddubsw` multiplies 32 code pairs (the query's magnitudes, as
/// unsigned bytes, by the row's codes with the query's signs, `vpsignb`) and adds neighbours
/// into sixteen `i16` lanes (exact: two products of codes of at most 127 sum to at most
/// 32,258), `vpmaddwd` by ones adds those into eight `i32` lanes. The lanes of eight rows are
/// then summed together (three rounds of `vphaddd` and one 128-bit swap), one store for the
/// eight rows' dot products, instead of a scalar sum of eight lanes per row.
#[cfg(target_arch = "x86_64")]
struct Avx2Dots<'a> {
    simd: pulp::x86::V3,
    codes: &'a [i8],
    q: &'a [i8],
    out: &'a mut [i32],
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Avx2Dots<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        use core::arch::x86_64::__m256i;
        const LANES: usize = 32;
        const GROUP: usize = 8;
        let Self {
            simd,
            codes,
            q,
            out,
        } = self;
        let avx2 = simd.avx2;
        let d = q.len();
        let whole = d - d % LANES;
        // The query's steps: its signs, and its magnitudes (at most 127: unsigned bytes).
        let steps: Vec<(__m256i, __m256i)> = q[..whole]
            .chunks_exact(LANES)
            .map(|c| {
                let signs: __m256i = pulp::cast(<[i8; LANES]>::try_from(c).unwrap_or([0; LANES]));
                (signs, avx2._mm256_abs_epi8(signs))
            })
            .collect();
        let ones = simd.avx._mm256_set1_epi16(1);
        let grouped = out.len() - out.len() % GROUP;
        for (group, dots) in out[..grouped].chunks_exact_mut(GROUP).enumerate() {
            let row = group * GROUP;
            let mut s: [__m256i; GROUP] = [pulp::cast([0_i32; 8]); GROUP];
            for (i, lanes) in s.iter_mut().enumerate() {
                let at = (row + i) * d;
                *lanes = row_lanes(simd, &codes[at..at + whole], &steps, ones);
            }
            // [r0 r0 r1 r1 | r0 r0 r1 r1] and so on: each round halves the lanes per row.
            let h01 = avx2._mm256_hadd_epi32(s[0], s[1]);
            let h23 = avx2._mm256_hadd_epi32(s[2], s[3]);
            let h45 = avx2._mm256_hadd_epi32(s[4], s[5]);
            let h67 = avx2._mm256_hadd_epi32(s[6], s[7]);
            // [r0 r1 r2 r3 | r0 r1 r2 r3]: low and high halves of each row's lanes.
            let h0123 = avx2._mm256_hadd_epi32(h01, h23);
            let h4567 = avx2._mm256_hadd_epi32(h45, h67);
            let low = avx2._mm256_permute2x128_si256::<0x20>(h0123, h4567);
            let high = avx2._mm256_permute2x128_si256::<0x31>(h0123, h4567);
            let sums: [i32; GROUP] = pulp::cast(avx2._mm256_add_epi32(low, high));
            dots.copy_from_slice(&sums);
        }
        for (row, dot) in out.iter_mut().enumerate().skip(grouped) {
            let at = row * d;
            let sums: [i32; 8] = pulp::cast(row_lanes(simd, &codes[at..at + whole], &steps, ones));
            *dot = sums.iter().sum();
        }
        if whole < d {
            for (row, dot) in out.iter_mut().enumerate() {
                *dot += codes[row * d + whole..(row + 1) * d]
                    .iter()
                    .zip(&q[whole..])
                    .map(|(x, y)| i32::from(*x) * i32::from(*y))
                    .sum::<i32>();
            }
        }
    }
}

/// One row's products with the query's `steps` (its signs and magnitudes, 32 codes each), in
/// eight lanes whose sum is the row's dot product over those codes. Inlined into
/// [`Avx2Dots::call`], whose instructions it needs.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn row_lanes(
    simd: pulp::x86::V3,
    codes: &[i8],
    steps: &[(core::arch::x86_64::__m256i, core::arch::x86_64::__m256i)],
    ones: core::arch::x86_64::__m256i,
) -> core::arch::x86_64::__m256i {
    use core::arch::x86_64::__m256i;
    const LANES: usize = 32;
    let avx2 = simd.avx2;
    let mut sum: __m256i = pulp::cast([0_i32; 8]);
    for (chunk, &(signs, magnitudes)) in codes.chunks_exact(LANES).zip(steps) {
        let chunk: __m256i = pulp::cast(<[i8; LANES]>::try_from(chunk).unwrap_or([0; LANES]));
        let signed = avx2._mm256_sign_epi8(chunk, signs);
        let pairs = avx2._mm256_maddubs_epi16(magnitudes, signed);
        sum = avx2._mm256_add_epi32(sum, avx2._mm256_madd_epi16(pairs, ones));
    }
    sum
}

/// A scan's buffers, reused from query to query: one chunk's rows at a time (in L1, however
/// many rows the owner has), and what the scan keeps across chunks.
#[derive(Default)]
struct ScanBuffers {
    /// The chunk's integer dot products, and its rows' upper bounds.
    dots: Vec<i32>,
    highs: Vec<f64>,
    /// The best lower bounds so far, highest first.
    best: Vec<f64>,
    /// Rows whose upper bound reached the floor when they were scanned, with that bound.
    maybe: Vec<(usize, f64)>,
}

thread_local! {
    static SCAN: std::cell::RefCell<ScanBuffers> = std::cell::RefCell::new(ScanBuffers::default());
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

impl Rows {
    fn chunk(&self, row: usize) -> &Chunk {
        &self.chunks[row / CHUNK_ROWS]
    }

    fn id(&self, row: usize) -> &Arc<str> {
        &self.chunk(row).ids[row % CHUNK_ROWS]
    }

    /// The exact cosine of row `row` with the unit vector `q` (0 for a zero vector: it
    /// matches nothing).
    fn cosine(&self, row: usize, q: &[f32]) -> f32 {
        let chunk = self.chunk(row);
        let at = row % CHUNK_ROWS;
        let norm = chunk.norms[at];
        if norm > 0.0 && norm.is_finite() {
            dot(&chunk.vectors[at], q) / norm
        } else {
            0.0
        }
    }

    /// Appends a row; its number.
    fn push(&mut self, id: Arc<str>, vector: &Arc<[f32]>) -> usize {
        let row = self.len;
        if row.is_multiple_of(CHUNK_ROWS) {
            self.chunks.push(Arc::new(Chunk::default()));
        }
        let d = self.dimension;
        if let Some(last) = self.chunks.last_mut() {
            let chunk = Arc::make_mut(last);
            chunk.ids.push(id);
            chunk.vectors.push(Arc::clone(vector));
            chunk.codes.resize(chunk.codes.len() + d, 0);
            chunk.scales.push((0.0, 0.0));
            chunk.norms.push(0.0);
        }
        self.len += 1;
        self.set(row, vector);
        row
    }

    /// Sets row `row`'s vector (and codes).
    fn set(&mut self, row: usize, vector: &Arc<[f32]>) {
        let d = self.dimension;
        let q = quantize(&unit(vector));
        let at = row % CHUNK_ROWS;
        let chunk = Arc::make_mut(&mut self.chunks[row / CHUNK_ROWS]);
        chunk.vectors[at] = Arc::clone(vector);
        chunk.codes[at * d..(at + 1) * d].copy_from_slice(&q.codes);
        chunk.scales[at] = (q.step, q.l1);
        chunk.norms[at] = norm(vector);
    }

    /// Removes row `row` by moving the last row into its place; the id of the row moved, if
    /// one was.
    fn swap_remove(&mut self, row: usize) -> Option<Arc<str>> {
        let last = self.len.checked_sub(1)?;
        let d = self.dimension;
        self.generation = next_generation();
        let moved = (row != last).then(|| {
            let from = self.chunk(last);
            let at = last % CHUNK_ROWS;
            (
                Arc::clone(&from.ids[at]),
                Arc::clone(&from.vectors[at]),
                from.codes[at * d..(at + 1) * d].to_vec(),
                from.scales[at],
                from.norms[at],
            )
        });
        let moved_id = moved.as_ref().map(|(id, ..)| Arc::clone(id));
        if let Some((id, vector, codes, scale, norm)) = moved {
            let at = row % CHUNK_ROWS;
            let chunk = Arc::make_mut(&mut self.chunks[row / CHUNK_ROWS]);
            chunk.ids[at] = id;
            chunk.vectors[at] = vector;
            chunk.codes[at * d..(at + 1) * d].copy_from_slice(&codes);
            chunk.scales[at] = scale;
            chunk.norms[at] = norm;
        }
        if let Some(tail) = self.chunks.last_mut() {
            let chunk = Arc::make_mut(tail);
            chunk.ids.pop();
            chunk.vectors.pop();
            chunk.codes.truncate(chunk.codes.len().saturating_sub(d));
            chunk.scales.pop();
            chunk.norms.pop();
            if chunk.ids.is_empty() {
                self.chunks.pop();
            }
        }
        self.len = last;
        moved_id
    }

    /// The best `limit` of `rows` by exact cosine with the unit vector `q` (ties by id), best
    /// first: (row, cosine).
    fn best(
        &self,
        q: &[f32],
        limit: usize,
        rows: impl Iterator<Item = usize>,
    ) -> Vec<(usize, f32)> {
        let mut best: BinaryHeap<Candidate<'_>> = BinaryHeap::with_capacity(limit + 1);
        for row in rows {
            let candidate = Candidate {
                cosine: self.cosine(row, q),
                row,
                id: self.id(row),
            };
            if best.len() < limit {
                best.push(candidate);
            } else if let Some(mut worst) = best.peek_mut()
                && candidate < *worst
            {
                *worst = candidate;
            }
        }
        best.into_sorted_vec()
            .into_iter()
            .map(|c| (c.row, c.cosine))
            .collect()
    }

    /// The best `limit` rows for the unit vector `q`, scanning every row.
    fn nearest(&self, q: &[f32], limit: usize) -> Vec<(usize, f32)> {
        self.best(q, limit, self.candidates(q, limit).into_iter())
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
            return (0..self.len).collect();
        }
        // Chunk by chunk: the rows' integer dot products (a tight loop over the chunk's
        // codes), then their upper bounds (a loop without branches, which the compiler
        // vectorizes), then the rows whose upper bound reaches the `k`-th best lower bound so
        // far (`floor`). The floor only rises, so a row below it is dropped at once (most
        // rows, once the scan is under way: their lower bound is only computed for the rest);
        // the rows kept on the way are filtered once more by the final floor, which leaves the
        // rows whose upper bound reaches the `k`-th best lower bound of all rows.
        let slack = rounding_slack(n);
        let bounds = move |dot: i32, (step, l1): (f32, f32)| {
            let step = f64::from(step);
            let approx = step * q_step * f64::from(dot);
            let error = step * q_l1 + q_step * (f64::from(l1) + n * step) + slack;
            (approx, error)
        };
        SCAN.with_borrow_mut(move |scan| {
            let ScanBuffers {
                dots,
                highs,
                best,
                maybe,
            } = scan;
            best.clear();
            maybe.clear();
            dots.resize(CHUNK_ROWS, 0);
            highs.resize(CHUNK_ROWS, 0.0);
            let mut floor = f64::NEG_INFINITY;
            for (at, chunk) in self.chunks.iter().enumerate() {
                let first = at * CHUNK_ROWS;
                let rows = CHUNK_ROWS.min(self.len.saturating_sub(first));
                let (dots, highs) = (&mut dots[..rows], &mut highs[..rows]);
                code_dots(&chunk.codes, &q_codes, dots);
                for ((&dot, &scale), high) in dots.iter().zip(&chunk.scales).zip(highs.iter_mut()) {
                    let (approx, error) = bounds(dot, scale);
                    *high = approx + error;
                }
                for (i, &high) in highs.iter().enumerate() {
                    if high < floor {
                        continue;
                    }
                    maybe.push((first + i, high));
                    let (approx, error) = bounds(dots[i], chunk.scales[i]);
                    let low = approx - error;
                    if k > 0 && (best.len() < k || low > floor) {
                        let at = best.partition_point(|&b| b >= low);
                        best.insert(at, low);
                        best.truncate(k);
                        if best.len() == k {
                            floor = best[k - 1];
                        }
                    }
                }
            }
            maybe
                .iter()
                .filter(|&&(_, high)| high >= floor)
                .map(|&(row, _)| row)
                .collect()
        })
    }
}

impl OwnerVectors {
    fn check(&self, e: &Embedding) -> Result<(), IndexError> {
        match &self.model {
            Some(model) if **model != *e.model() || self.rows.dimension != e.dimension() => {
                Err(IndexError::ModelMismatch {
                    stored: format!("{model} ({} dimensions)", self.rows.dimension),
                    given: format!("{} ({} dimensions)", e.model(), e.dimension()),
                })
            }
            _ => Ok(()),
        }
    }
}

impl OwnerVectors {
    /// The rows `hint` names, when it still holds: it is of this owner's rows of this
    /// generation (nothing it saw was replaced or removed since), and each id it names is one
    /// of the rows it saw.
    fn hinted_rows(&self, owner: &str, hint: &NearestHint) -> Option<Vec<usize>> {
        if hint.owner != owner
            || hint.generation != self.rows.generation
            || hint.rows > self.rows.len
        {
            return None;
        }
        hint.ids
            .iter()
            .map(|id| self.row_of.get(id).copied().filter(|&row| row < hint.rows))
            .collect()
    }
}

impl RowsToSearch {
    /// [`VectorStore::nearest`]'s answer from these rows, as a hint for a decision to check
    /// ([`VectorStore::nearest_after`]). `query` was checked against the owner's model when
    /// the rows were taken.
    pub fn hint(&self, query: &Embedding, limit: usize) -> NearestHint {
        let q = unit(query.vector());
        let best = self.rows.nearest(&q, limit);
        NearestHint {
            owner: self.owner.clone(),
            limit,
            generation: self.rows.generation,
            rows: self.rows.len,
            ids: best
                .iter()
                .map(|&(row, _)| Arc::clone(self.rows.id(row)))
                .collect(),
        }
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
            o.rows.dimension = e.dimension();
        }
        match o.row_of.get(id) {
            Some(&row) => {
                o.rows.generation = next_generation();
                o.rows.set(row, e.vector_arc());
            }
            None => {
                let id: Arc<str> = Arc::from(id);
                let row = o.rows.push(Arc::clone(&id), e.vector_arc());
                o.row_of.insert(id, row);
            }
        }
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
        if let Some(moved) = o.rows.swap_remove(row) {
            o.row_of.insert(moved, row);
        }
        true
    }

    /// The owner's rows for a search made after the index's lock is released (`None` when the
    /// owner has none); fails when `query` is of another model than the owner's vectors.
    pub(super) fn rows_for(
        &self,
        owner: &str,
        query: &Embedding,
    ) -> Result<Option<RowsToSearch>, IndexError> {
        let Some(o) = self.owners.get(owner) else {
            return Ok(None);
        };
        o.check(query)?;
        Ok(Some(RowsToSearch {
            owner: owner.to_owned(),
            rows: o.rows.clone(),
        }))
    }

    /// The owner's `limit` memories nearest to `query` by cosine, best first, ties by id.
    pub(super) fn nearest(
        &self,
        owner: &str,
        query: &Embedding,
        limit: usize,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        self.nearest_after(owner, query, limit, None)
    }

    /// [`VectorStore::nearest`], the same answer bit for bit, from `hint` when it still holds:
    /// the best of its rows are among the best of the rows it saw (unchanged, its generation
    /// says), so only they and the rows added since are compared. Without a hint, or with one
    /// that no longer holds, every row is scanned.
    pub(super) fn nearest_after(
        &self,
        owner: &str,
        query: &Embedding,
        limit: usize,
        hint: Option<&NearestHint>,
    ) -> Result<Vec<(String, f32)>, IndexError> {
        Ok(self
            .nearest_shared(owner, query, limit, hint)?
            .into_iter()
            .map(|(id, cosine)| (id.to_string(), cosine))
            .collect())
    }

    /// [`VectorStore::nearest_after`] with the ids as the rows hold them (shared texts).
    pub(super) fn nearest_shared(
        &self,
        owner: &str,
        query: &Embedding,
        limit: usize,
        hint: Option<&NearestHint>,
    ) -> Result<Vec<(Arc<str>, f32)>, IndexError> {
        let Some(o) = self.owners.get(owner) else {
            return Ok(Vec::new());
        };
        o.check(query)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = &o.rows;
        let q = unit(query.vector());
        let seen = hint
            .filter(|h| h.limit == limit)
            .and_then(|h| o.hinted_rows(owner, h).map(|seen| (seen, h.rows)));
        let best = match seen {
            Some((seen, since)) => rows.best(&q, limit, seen.into_iter().chain(since..rows.len)),
            None => rows.nearest(&q, limit),
        };
        Ok(best
            .into_iter()
            .map(|(row, cosine)| (Arc::clone(rows.id(row)), cosine))
            .collect())
    }

    /// The text of `owner`'s id `id`, shared, when it has a vector here.
    pub(super) fn id_text(&self, owner: &str, id: &str) -> Option<Arc<str>> {
        let (id, _) = self.owners.get(owner)?.row_of.get_key_value(id)?;
        Some(Arc::clone(id))
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
            .map(|id| o.row_of.get(*id).map(|&row| o.rows.cosine(row, &q)))
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

    /// The exact cosine by its definition: the row's dot product with the unit query over
    /// the row's norm.
    fn reference_cosine(v: &[f32], q: &[f32]) -> f32 {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            reference_dot(v, q) / norm
        } else {
            0.0
        }
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
        for d in [1_usize, 7, 16, 31, 32, 33, 64, 100, 384] {
            let most = code_max(d) as i8;
            let rows = 37;
            let codes: Vec<i8> = (0..rows * d)
                .map(|i| match i % 5 {
                    0 => most,
                    1 => -most,
                    _ => (vector(i as u64, 1)[0] * 2.0 * f32::from(most)) as i8,
                })
                .collect();
            let q: Vec<i8> = (0..d)
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
            rows.push((id, v));
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
                .map(|(id, v)| (id.clone(), reference_cosine(v, &q)))
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
                    Some(reference_cosine(v, &q).to_bits()),
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

    /// Whether `hint` would be used for `owner` (rather than a scan of every row).
    fn holds(store: &VectorStore, owner: &str, hint: &NearestHint) -> bool {
        store
            .owners
            .get(owner)
            .is_some_and(|o| o.hinted_rows(owner, hint).is_some())
    }

    /// A hint found on a copy of the rows gives the full scan's answer, bit for bit, while rows
    /// are only added (the new ones compared too); any replacement or removal, or another
    /// store (an index rebuilt), makes it stale, and the answer is still the full scan's.
    #[test]
    fn a_hint_gives_the_full_scans_answer_and_goes_stale_on_any_change() {
        let dimension = 64;
        let mut store = VectorStore::default();
        let stored = |store: &mut VectorStore, i: u64| {
            let v = if i.is_multiple_of(7) {
                vector(7, dimension)
            } else {
                vector(i, dimension)
            };
            store
                .upsert("o", &format!("m{i:04}"), &embedding(v))
                .expect("stored");
        };
        for i in 0..600 {
            stored(&mut store, i);
        }
        let query = embedding(vector(7, dimension));
        let bits = |v: &[(String, f32)]| {
            v.iter()
                .map(|(id, c)| (id.clone(), c.to_bits()))
                .collect::<Vec<_>>()
        };
        // The answer with the hint is the full scan's, bit for bit.
        let as_full_scan = |store: &VectorStore, hint: &NearestHint, limit: usize| {
            let with_hint = store.nearest_after("o", &query, limit, Some(hint));
            let full = store.nearest("o", &query, limit);
            assert_eq!(bits(&with_hint.expect("scan")), bits(&full.expect("scan")));
        };
        for limit in [1, 4, 30] {
            let rows = store.rows_for("o", &query).expect("rows").expect("some");
            let hint = rows.hint(&query, limit);
            as_full_scan(&store, &hint, limit);
            // Rows added since (some nearer than any the hint saw: exact duplicates of the
            // query, whose ids sort first) are compared too.
            for i in 600..650 {
                stored(&mut store, i);
            }
            assert!(holds(&store, "o", &hint));
            as_full_scan(&store, &hint, limit);
            // A removal moves a row: stale.
            assert!(store.remove("o", "m0003"));
            assert!(!holds(&store, "o", &hint));
            as_full_scan(&store, &hint, limit);
            for i in 600..650 {
                assert!(store.remove("o", &format!("m{i:04}")));
            }
            stored(&mut store, 3);
        }
        // A replaced vector: stale.
        let rows = store.rows_for("o", &query).expect("rows").expect("some");
        let hint = rows.hint(&query, 4);
        assert!(holds(&store, "o", &hint));
        store
            .upsert("o", "m0014", &embedding(vector(99, dimension)))
            .expect("replaced");
        assert!(!holds(&store, "o", &hint));
        // Another store with the same rows (an index rebuilt): stale.
        let mut rebuilt = VectorStore::default();
        for i in 0..600 {
            stored(&mut rebuilt, i);
        }
        let hint = rebuilt
            .rows_for("o", &query)
            .expect("rows")
            .expect("some")
            .hint(&query, 4);
        assert!(holds(&rebuilt, "o", &hint));
        assert!(!holds(&store, "o", &hint));
        assert!(!holds(&rebuilt, "other", &hint));
    }

    /// Removing rows until chunks empty keeps every answer the plain scan's.
    #[test]
    fn removals_across_chunks_keep_the_plain_scans_answer() {
        let dimension = 16;
        let mut store = VectorStore::default();
        let mut rows: Vec<(String, Vec<f32>)> = Vec::new();
        for i in 0..(2 * CHUNK_ROWS as u64 + 10) {
            let v = vector(i, dimension);
            let id = format!("m{i:04}");
            store
                .upsert("o", &id, &embedding(v.clone()))
                .expect("stored");
            rows.push((id, v));
        }
        let q = unit(&vector(4242, dimension));
        for round in 0..(CHUNK_ROWS + 20) {
            let gone = rows.remove((round * 7) % rows.len()).0;
            assert!(store.remove("o", &gone));
            if round % 29 == 0 {
                let mut want: Vec<(String, f32)> = rows
                    .iter()
                    .map(|(id, v)| (id.clone(), reference_cosine(v, &q)))
                    .collect();
                want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                want.truncate(10);
                let got = store.nearest("o", &embedding(q.clone()), 10).expect("scan");
                assert_eq!(got, want, "round {round}");
            }
        }
        let o = &store.owners["o"];
        assert_eq!(o.rows.len, rows.len());
        assert_eq!(o.rows.chunks.len(), rows.len().div_ceil(CHUNK_ROWS));
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
