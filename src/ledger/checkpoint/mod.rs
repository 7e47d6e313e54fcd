//! Signed checkpoints: the C2SP `tlog-checkpoint` body (origin, tree size, root hash), the C2SP
//! `signed-note` envelope with Ed25519 signature lines, and the text encodings of the keys that
//! sign and verify notes (`<name>+<key id>+<key>` verifier keys, `PRIVATE+KEY+…` signer keys, as
//! in Go's `golang.org/x/mod/sumdb/note`).
//!
//! Owns these byte-exact text formats and Ed25519 signing and verification of notes. It must not
//! know where keys or checkpoints are kept, what time it is, how a root hash is computed (that is
//! `merkle`), or whether a new checkpoint extends the last one signed: a log must never sign two
//! checkpoints that contradict each other, and the caller enforces that with a Merkle
//! consistency proof before calling [`sign_checkpoint`] ([`Checkpoint::relation`] says which
//! check applies). Pure: the only effect is reading OS randomness in [`NoteSigner::generate`].
//!
//! Specifications: <https://c2sp.org/tlog-checkpoint>, <https://c2sp.org/signed-note>.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Signature type byte of Ed25519 in signed notes, key ids and key encodings.
const ED25519_TYPE: u8 = 0x01;
/// Every signature line starts with an em dash (U+2014) and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";
/// Signer keys are marked so that they are never mistaken for a verifier key.
const SIGNER_KEY_PREFIX: &str = "PRIVATE+KEY+";
/// Most signature lines [`open_note`] reads in one note. The spec requires accepting at least
/// 16; Go's implementation accepts 100.
pub const MAX_SIGNATURES: usize = 100;

/// Errors of checkpoint and note parsing, key parsing and note verification. None is a tool
/// error of the MCP server: they reach an operator or auditor through the CLI (key files,
/// checkpoint verification) as a message and a non-zero exit. Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the text does not end with a newline")]
    MissingFinalNewline,
    #[error("line {line} contains an ASCII control character other than newline")]
    ControlCharacter { line: usize },
    #[error("a checkpoint has at least 3 lines (origin, tree size, root hash); found {found}")]
    TooFewLines { found: usize },
    #[error("the checkpoint origin (line 1) is empty")]
    EmptyOrigin,
    #[error("extension line {line} of the checkpoint is empty")]
    EmptyExtensionLine { line: usize },
    #[error("checkpoint line {line} would contain a line break")]
    LineBreakInField { line: usize },
    #[error("the tree size (line 2) is not an ASCII decimal number")]
    TreeSizeNotDecimal,
    #[error("the tree size (line 2) has a leading zero")]
    TreeSizeLeadingZero,
    #[error("the tree size (line 2) does not fit in 64 bits")]
    TreeSizeTooLarge,
    #[error("the root hash (line 3) is not standard padded base64")]
    RootHashNotBase64,
    #[error("the root hash (line 3) decodes to {len} bytes, not 32")]
    RootHashLength { len: usize },
    #[error(
        "a key is written <name>+<8 hex digits>+<base64 key>, and a signer key starts with \
         PRIVATE+KEY+"
    )]
    KeyFormat,
    #[error("a key name must be non-empty, without spaces, `+` or control characters")]
    InvalidKeyName,
    #[error("the key id is not 8 lowercase hex digits")]
    KeyIdNotHex,
    #[error("the key is not standard padded base64")]
    KeyNotBase64,
    #[error("unknown key type {type_byte:#04x}; only Ed25519 (0x01) is supported")]
    UnknownKeyType { type_byte: u8 },
    #[error("the key decodes to {len} bytes, not 33 (type byte 0x01 and 32 key bytes)")]
    KeyLength { len: usize },
    #[error("the key id {stated:08x} does not match the key, whose id is {computed:08x}")]
    KeyIdMismatch { stated: u32, computed: u32 },
    #[error("the public key is not a valid Ed25519 key, or is of small order")]
    InvalidPublicKey,
    #[error("the operating system gave no randomness for a new key: {0}")]
    NoRandomness(String),
    #[error("the note has no blank line followed by signature lines")]
    NoSignatureBlock,
    #[error("line {line} is not a signature line `— <name> <base64 signature>`")]
    NotASignatureLine { line: usize },
    #[error("the key name on signature line {line} is empty or contains `+` or a space")]
    InvalidSignerName { line: usize },
    #[error("the signature on line {line} is not standard padded base64")]
    SignatureNotBase64 { line: usize },
    #[error("the signature on line {line} is shorter than a key id and one byte")]
    SignatureTooShort { line: usize },
    #[error("the note has more than {max} signature lines")]
    TooManySignatures { max: usize },
    #[error("the signature by known key {name}+{key_id:08x} does not verify")]
    InvalidSignature { name: String, key_id: u32 },
    #[error("two different verifier keys are named {name}+{key_id:08x}")]
    AmbiguousKey { name: String, key_id: u32 },
    #[error("no signature in the note is by a known key")]
    NoVerifiedSignature,
}

use CheckpointError as E;

/// A tree head of a transparency log, as the body of a signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Unique name of the log that issued it (for thinkledger the signing key's name, `thinkledger/<ledgerId>`):
    /// non-empty, one line, no control characters.
    origin: String,
    /// Number of leaves in the tree.
    size: u64,
    /// Merkle root hash of the first `size` leaves.
    root: [u8; 32],
    /// Opaque non-empty lines after the root hash. Monitors cannot audit them, so thinkledger
    /// writes none, but a parsed checkpoint keeps them so that its body re-formats exactly.
    extensions: Vec<String>,
}

/// How two checkpoints relate; the caller decides what proof, if any, it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// The origins differ: neither says anything about the other.
    DifferentLogs,
    /// Same log, size and root hash: the same tree (extension lines may differ).
    SameTree,
    /// Same log and size but different root hashes: if both are signed, the log forked.
    Fork,
    /// Same log, different sizes: consistent only if a consistency proof from the smaller tree
    /// to the larger verifies. From size 0 there is no proof: the smaller checkpoint's root must
    /// then be the hash of the empty tree.
    NeedsConsistencyProof { old_size: u64, new_size: u64 },
}

impl Checkpoint {
    /// A checkpoint whose body will parse back to itself.
    pub fn new(
        origin: impl Into<String>,
        size: u64,
        root: [u8; 32],
        extensions: Vec<String>,
    ) -> Result<Self, CheckpointError> {
        let origin = origin.into();
        check_body_line(&origin, 1)?;
        if origin.is_empty() {
            return Err(E::EmptyOrigin);
        }
        for (line, extension) in (4..).zip(&extensions) {
            check_body_line(extension, line)?;
            if extension.is_empty() {
                return Err(E::EmptyExtensionLine { line });
            }
        }
        Ok(Self {
            origin,
            size,
            root,
            extensions,
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn root(&self) -> &[u8; 32] {
        &self.root
    }

    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// The note text: origin, decimal size, base64 root hash and extension lines, each ending
    /// in a newline.
    pub fn to_body(&self) -> String {
        let mut body = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            BASE64.encode(self.root)
        );
        for extension in &self.extensions {
            body.push_str(extension);
            body.push('\n');
        }
        body
    }

    /// Parses a note text as a checkpoint, rejecting anything [`Checkpoint::to_body`] would not
    /// have written.
    pub fn parse_body(body: &str) -> Result<Self, CheckpointError> {
        check_note_characters(body)?;
        let lines = body.strip_suffix('\n').ok_or(E::MissingFinalNewline)?;
        let lines: Vec<&str> = lines.split('\n').collect();
        let [origin, size, root, extensions @ ..] = lines.as_slice() else {
            return Err(E::TooFewLines { found: lines.len() });
        };
        if origin.is_empty() {
            return Err(E::EmptyOrigin);
        }
        let size = parse_tree_size(size)?;
        let root = parse_root_hash(root)?;
        if let Some(line) = (4..)
            .zip(extensions)
            .find_map(|(n, l)| l.is_empty().then_some(n))
        {
            return Err(E::EmptyExtensionLine { line });
        }
        Ok(Self {
            origin: (*origin).to_owned(),
            size,
            root,
            extensions: extensions.iter().map(|l| (*l).to_owned()).collect(),
        })
    }

    /// How `self` and `other` relate. Pure comparison: proving consistency is the caller's.
    pub fn relation(&self, other: &Checkpoint) -> Relation {
        if self.origin != other.origin {
            Relation::DifferentLogs
        } else if self.size == other.size {
            if self.root == other.root {
                Relation::SameTree
            } else {
                Relation::Fork
            }
        } else {
            Relation::NeedsConsistencyProof {
                old_size: self.size.min(other.size),
                new_size: self.size.max(other.size),
            }
        }
    }
}

/// A public key that verifies note signatures, with the name it signs under.
#[derive(Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    /// Key name as it appears on signature lines.
    name: String,
    /// First 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key), big-endian.
    key_id: u32,
    /// The Ed25519 public key; never a small-order point.
    key: VerifyingKey,
}

impl NoteVerifier {
    /// Parses `<name>+<hex key id>+<base64(0x01 ‖ public key)>`, checking the key id.
    pub fn from_vkey(vkey: &str) -> Result<Self, CheckpointError> {
        let (name, stated, blob) = split_key(vkey)?;
        let public = ed25519_key_bytes(&blob)?;
        let computed = key_id(name, &public);
        if stated != computed {
            return Err(E::KeyIdMismatch { stated, computed });
        }
        let key = VerifyingKey::from_bytes(&public).map_err(|_| E::InvalidPublicKey)?;
        if key.is_weak() {
            return Err(E::InvalidPublicKey);
        }
        Ok(Self {
            name: name.to_owned(),
            key_id: computed,
            key,
        })
    }

    /// The verifier key text, as `thinkledger key` prints it for auditors.
    pub fn to_vkey(&self) -> String {
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            BASE64.encode(typed_key(self.key.as_bytes()))
        )
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key_id(&self) -> u32 {
        self.key_id
    }
}

impl fmt::Debug for NoteVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NoteVerifier")
            .field(&self.to_vkey())
            .finish()
    }
}

/// A private key that signs notes under a name. Its `Debug` shows no secret.
pub struct NoteSigner {
    /// Key name written on signature lines.
    name: String,
    /// Key id of the public half, see [`NoteVerifier`].
    key_id: u32,
    /// The Ed25519 key, zeroized on drop by `ed25519-dalek`.
    key: SigningKey,
}

impl NoteSigner {
    /// A new key from the operating system's randomness.
    pub fn generate(name: &str) -> Result<Self, CheckpointError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| E::NoRandomness(e.to_string()))?;
        Self::from_seed(name, &seed)
    }

    /// Parses `PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 ‖ seed)>`, checking the key id
    /// against the derived public key.
    pub fn from_skey(skey: &str) -> Result<Self, CheckpointError> {
        let rest = skey.strip_prefix(SIGNER_KEY_PREFIX).ok_or(E::KeyFormat)?;
        let (name, stated, blob) = split_key(rest)?;
        let signer = Self::from_seed(name, &ed25519_key_bytes(&blob)?)?;
        if stated != signer.key_id {
            return Err(E::KeyIdMismatch {
                stated,
                computed: signer.key_id,
            });
        }
        Ok(signer)
    }

    /// The signer key text for the key file. It holds the secret.
    pub fn to_skey(&self) -> String {
        format!(
            "{SIGNER_KEY_PREFIX}{}+{:08x}+{}",
            self.name,
            self.key_id,
            BASE64.encode(typed_key(self.key.as_bytes()))
        )
    }

    /// The public half.
    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier {
            name: self.name.clone(),
            key_id: self.key_id,
            key: self.key.verifying_key(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, CheckpointError> {
        if !is_valid_key_name(name) {
            return Err(E::InvalidKeyName);
        }
        let key = SigningKey::from_bytes(seed);
        Ok(Self {
            name: name.to_owned(),
            key_id: key_id(name, key.verifying_key().as_bytes()),
            key,
        })
    }
}

impl fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoteSigner")
            .field("name", &self.name)
            .field("key_id", &format_args!("{:08x}", self.key_id))
            .finish_non_exhaustive()
    }
}

/// A note whose text carries at least one verified signature by a known key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedNote {
    /// The signed text, final newline included.
    text: String,
    /// Names of the known keys whose signatures verified, in order of first appearance, one
    /// entry per key.
    signers: Vec<String>,
}

impl OpenedNote {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn signers(&self) -> &[String] {
        &self.signers
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

/// Signs a note text (it must end in a newline and hold no control character but newline):
/// the text, a blank line, and one signature line.
pub fn sign_note(signer: &NoteSigner, text: &str) -> Result<String, CheckpointError> {
    check_note_characters(text)?;
    if !text.ends_with('\n') {
        return Err(E::MissingFinalNewline);
    }
    Ok(signed_note(signer, text))
}

/// Signs a checkpoint. Call only after checking it is consistent with every checkpoint this
/// key signed before.
pub fn sign_checkpoint(signer: &NoteSigner, checkpoint: &Checkpoint) -> String {
    signed_note(signer, &checkpoint.to_body())
}

/// A signed note as a reviewer may have saved it, put back in its signed form: CRLF line ends
/// become `\n`, and the empty lines after the last signature line are dropped (`jq -r` and most
/// editors add one), leaving the note's one final `\n`. A note's text never holds `\r` (it is
/// refused) nor ends in an empty line, so nothing a signature covers is changed. Every command
/// that reads a kept checkpoint from a file or a client passes it through here.
pub fn kept_note(note: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = note.trim_end_matches(['\n', '\r']);
    if !note.contains('\r') && trimmed.len() + 1 == note.len() {
        return std::borrow::Cow::Borrowed(note);
    }
    let mut text = trimmed.replace("\r\n", "\n");
    text.push('\n');
    std::borrow::Cow::Owned(text)
}

/// Parses a signed note and verifies every signature by a key in `known` (matched by name and
/// key id). Signatures by other keys are ignored; a failing signature by a known key rejects
/// the note, and so does a note with no verified signature.
pub fn open_note(note: &str, known: &[NoteVerifier]) -> Result<OpenedNote, CheckpointError> {
    check_note_characters(note)?;
    if !note.ends_with('\n') {
        return Err(E::MissingFinalNewline);
    }
    let split = note.rfind("\n\n").ok_or(E::NoSignatureBlock)?;
    let (text, block) = note
        .split_at_checked(split + 1)
        .ok_or(E::NoSignatureBlock)?;
    let block = block.strip_prefix('\n').ok_or(E::NoSignatureBlock)?;
    let block = block.strip_suffix('\n').ok_or(E::NoSignatureBlock)?;
    let lines: Vec<&str> = block.split('\n').collect();
    if lines.len() > MAX_SIGNATURES {
        return Err(E::TooManySignatures {
            max: MAX_SIGNATURES,
        });
    }
    // The text's lines, then the blank line, then the first signature line.
    let first_line = text.matches('\n').count() + 2;
    let mut verified: Vec<&NoteVerifier> = Vec::new();
    for (line, signature_line) in (first_line..).zip(lines) {
        let (name, key_id, signature) = parse_signature_line(signature_line, line)?;
        let Some(verifier) = find_verifier(known, name, key_id)? else {
            continue;
        };
        let invalid = || E::InvalidSignature {
            name: name.to_owned(),
            key_id,
        };
        let signature = Signature::from_slice(&signature).map_err(|_| invalid())?;
        verifier
            .key
            .verify_strict(text.as_bytes(), &signature)
            .map_err(|_| invalid())?;
        if !verified.contains(&verifier) {
            verified.push(verifier);
        }
    }
    if verified.is_empty() {
        return Err(E::NoVerifiedSignature);
    }
    Ok(OpenedNote {
        text: text.to_owned(),
        signers: verified.iter().map(|v| v.name.clone()).collect(),
    })
}

fn signed_note(signer: &NoteSigner, text: &str) -> String {
    let signature = signer.key.sign(text.as_bytes());
    let mut blob = Vec::with_capacity(4 + Signature::BYTE_SIZE);
    blob.extend_from_slice(&signer.key_id.to_be_bytes());
    blob.extend_from_slice(&signature.to_bytes());
    format!(
        "{text}\n{SIGNATURE_PREFIX}{} {}\n",
        signer.name,
        BASE64.encode(blob)
    )
}

/// `(key name, key id, signature bytes)` of one signature line, numbered `line` in the note.
fn parse_signature_line(text: &str, line: usize) -> Result<(&str, u32, Vec<u8>), CheckpointError> {
    let rest = text
        .strip_prefix(SIGNATURE_PREFIX)
        .ok_or(E::NotASignatureLine { line })?;
    let (name, encoded) = rest.split_once(' ').ok_or(E::NotASignatureLine { line })?;
    if !is_valid_key_name(name) {
        return Err(E::InvalidSignerName { line });
    }
    let raw = BASE64
        .decode(encoded)
        .map_err(|_| E::SignatureNotBase64 { line })?;
    match raw.split_first_chunk::<4>() {
        Some((id, signature)) if !signature.is_empty() => {
            Ok((name, u32::from_be_bytes(*id), signature.to_vec()))
        }
        _ => Err(E::SignatureTooShort { line }),
    }
}

/// The known key named `name` with id `key_id`, if any. Listing the same key twice is harmless;
/// two different keys under one name and id cannot be told apart.
fn find_verifier<'a>(
    known: &'a [NoteVerifier],
    name: &str,
    key_id: u32,
) -> Result<Option<&'a NoteVerifier>, CheckpointError> {
    let mut matching = known
        .iter()
        .filter(|v| v.name == name && v.key_id == key_id);
    let first = matching.next();
    if let Some(first) = first
        && matching.any(|other| other.key != first.key)
    {
        return Err(E::AmbiguousKey {
            name: name.to_owned(),
            key_id,
        });
    }
    Ok(first)
}

/// Splits `<name>+<hex id>+<base64>` (the base64 may itself contain `+`).
fn split_key(text: &str) -> Result<(&str, u32, Vec<u8>), CheckpointError> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(encoded)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(E::KeyFormat);
    };
    if !is_valid_key_name(name) {
        return Err(E::InvalidKeyName);
    }
    let id_is_hex = id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let id = id_is_hex
        .then(|| u32::from_str_radix(id, 16).ok())
        .flatten()
        .ok_or(E::KeyIdNotHex)?;
    let blob = BASE64.decode(encoded).map_err(|_| E::KeyNotBase64)?;
    Ok((name, id, blob))
}

/// The 32 key bytes of a `0x01 ‖ key` blob.
fn ed25519_key_bytes(blob: &[u8]) -> Result<[u8; 32], CheckpointError> {
    match blob.split_first() {
        Some((&ED25519_TYPE, key)) => {
            <[u8; 32]>::try_from(key).map_err(|_| E::KeyLength { len: blob.len() })
        }
        Some((&type_byte, _)) => Err(E::UnknownKeyType { type_byte }),
        None => Err(E::KeyLength { len: 0 }),
    }
}

fn typed_key(key: &[u8; 32]) -> [u8; 33] {
    let mut out = [0u8; 33];
    out[0] = ED25519_TYPE;
    out[1..].copy_from_slice(key);
    out
}

/// First 4 bytes, big-endian, of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ Ed25519 public key).
fn key_id(name: &str, public: &[u8; 32]) -> u32 {
    let digest = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update([b'\n', ED25519_TYPE])
        .chain_update(public)
        .finalize();
    let mut id = [0u8; 4];
    id.copy_from_slice(&digest[..4]);
    u32::from_be_bytes(id)
}

/// Key names are non-empty, without Unicode spaces, `+` or control characters.
fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c < ' ')
}

/// A signed note is UTF-8 (guaranteed by `&str`) without ASCII control characters but newline.
fn check_note_characters(text: &str) -> Result<(), CheckpointError> {
    let mut line = 1;
    for byte in text.bytes() {
        if byte == b'\n' {
            line += 1;
        } else if byte < b' ' {
            return Err(E::ControlCharacter { line });
        }
    }
    Ok(())
}

/// One line of a checkpoint being built: no line break, no control character.
fn check_body_line(text: &str, line: usize) -> Result<(), CheckpointError> {
    if text.contains('\n') {
        return Err(E::LineBreakInField { line });
    }
    check_note_characters(text).map_err(|_| E::ControlCharacter { line })
}

fn parse_tree_size(text: &str) -> Result<u64, CheckpointError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(E::TreeSizeNotDecimal);
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(E::TreeSizeLeadingZero);
    }
    text.parse().map_err(|_| E::TreeSizeTooLarge)
}

fn parse_root_hash(text: &str) -> Result<[u8; 32], CheckpointError> {
    let raw = BASE64.decode(text).map_err(|_| E::RootHashNotBase64)?;
    <[u8; 32]>::try_from(raw.as_slice()).map_err(|_| E::RootHashLength { len: raw.len() })
}

#[cfg(test)]
mod tests;
