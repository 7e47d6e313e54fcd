//! The vector half of the memory index: per owner, one unit vector per memory, searched by exact
//! cosine (a dot product over unit vectors, in a fixed order, so equal inputs give equal bits).
//! Exact search is linear in the owner's memories: about 64 multiply-adds per memory for
//! potion-base-2M, well under a millisecond for 10k memories, fine up to ~100k per owner.
//!
//! Every owner's vectors share one model: a vector of another model or dimension is refused,
//! both when stored and when queried, instead of being compared meaninglessly.

use std::collections::HashMap;
use std::sync::Arc;

use crate::embed::Embedding;

use super::IndexError;

/// One owner's vectors.
#[derive(Debug, Default)]
struct OwnerVectors {
    /// The model every vector here came from (set by the first one).
    model: Option<Arc<str>>,
    /// Their dimension.
    dimension: usize,
    /// Memory ids, row by row.
    ids: Vec<String>,
    /// Row-major unit vectors, `ids.len() * dimension` floats.
    rows: Vec<f32>,
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

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

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
        if let Some(&row) = o.row_of.get(id) {
            o.rows[row * o.dimension..(row + 1) * o.dimension].copy_from_slice(&v);
        } else {
            o.row_of.insert(id.to_owned(), o.ids.len());
            o.ids.push(id.to_owned());
            o.rows.extend_from_slice(&v);
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
        let last = o.ids.len() - 1;
        if row != last {
            let d = o.dimension;
            o.rows.copy_within(last * d..(last + 1) * d, row * d);
            o.ids.swap(row, last);
            o.row_of.insert(o.ids[row].clone(), row);
        }
        o.ids.pop();
        o.rows.truncate(last * o.dimension);
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
        let q = unit(query.vector());
        let mut scored: Vec<(usize, f32)> =
            (0..o.ids.len()).map(|i| (i, dot(o.row(i), &q))).collect();
        let order = |a: &(usize, f32), b: &(usize, f32)| {
            b.1.total_cmp(&a.1)
                .then_with(|| o.ids[a.0].cmp(&o.ids[b.0]))
        };
        if scored.len() > limit && limit > 0 {
            scored.select_nth_unstable_by(limit - 1, order);
        }
        scored.truncate(limit);
        scored.sort_by(order);
        Ok(scored
            .into_iter()
            .map(|(i, score)| (o.ids[i].clone(), score))
            .collect())
    }

    /// The cosine of `owner`'s memory `id` with `query`, if it has a vector.
    pub(super) fn cosine(
        &self,
        owner: &str,
        id: &str,
        query: &Embedding,
    ) -> Result<Option<f32>, IndexError> {
        let Some(o) = self.owners.get(owner) else {
            return Ok(None);
        };
        o.check(query)?;
        let Some(&row) = o.row_of.get(id) else {
            return Ok(None);
        };
        Ok(Some(dot(o.row(row), &unit(query.vector()))))
    }
}
