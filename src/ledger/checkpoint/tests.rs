//! Tests of checkpoint bodies, signed notes and keys, with the Go `note` package's and the
//! C2SP specifications' published examples as known-answer vectors.

use serde::Deserialize;

use super::*;

/// Published vectors of Go's `golang.org/x/mod/sumdb/note`; see the file's `source`.
const GO_NOTE: &str = include_str!("../../../tests/fixtures/checkpoint/go_sumdb_note.json");
/// Worked examples of the C2SP specifications; see the file's `source`.
const C2SP: &str = include_str!("../../../tests/fixtures/checkpoint/c2sp_examples.json");

/// Base64 of 32 zero bytes.
const ZERO_ROOT: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const ENOCH_SKEY: &str =
    "PRIVATE+KEY+EnochRoot+af0cfe78+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const PETER_SIG: &str =
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GoVectors {
    keys: Vec<KeyVector>,
    sign: Vec<SignVector>,
    bad_keys: Vec<BadKeyVector>,
    open: Vec<OpenVector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyVector {
    name: String,
    key_id: String,
    vkey: String,
    skey: String,
}

#[derive(Deserialize)]
struct SignVector {
    skey: String,
    text: String,
    signed: String,
}

#[derive(Deserialize)]
struct BadKeyVector {
    vkey: String,
    expect: String,
}

#[derive(Deserialize)]
struct OpenVector {
    from: String,
    note: String,
    repeat: Option<Repeat>,
    vkeys: Vec<String>,
    expect: String,
    text: Option<String>,
}

#[derive(Deserialize)]
struct Repeat {
    line: String,
    times: usize,
}

#[derive(Deserialize)]
struct C2spVectors {
    checkpoints: Vec<CheckpointVector>,
    open: Vec<OpenVector>,
}

#[derive(Deserialize)]
struct CheckpointVector {
    body: String,
    origin: String,
    size: u64,
    root: String,
}

/// An outcome as text: `ok` renders a success, an error renders as its `Debug`.
fn outcome<T>(result: Result<T, CheckpointError>, ok: impl FnOnce(T) -> String) -> String {
    match result {
        Ok(value) => ok(value),
        Err(error) => format!("{error:?}"),
    }
}

/// Parses a body; a success must re-format byte for byte.
fn check_body(body: &str, expect: &str) {
    let got = outcome(Checkpoint::parse_body(body), |c| {
        assert_eq!(c.to_body(), body, "re-formatting {body:?}");
        format!(
            "{} {} {} {:?}",
            c.origin(),
            c.size(),
            BASE64.encode(c.root()),
            c.extensions()
        )
    });
    assert_eq!(got, expect, "parsing {body:?}");
}

/// Parses a verifier key; a success must re-encode byte for byte.
fn check_vkey(vkey: &str, expect: &str) {
    let got = outcome(NoteVerifier::from_vkey(vkey), |v| {
        assert_eq!(v.to_vkey(), vkey);
        format!("{} {:08x}", v.name(), v.key_id())
    });
    assert_eq!(got, expect, "parsing vkey {vkey:?}");
}

/// Parses a signer key; a success must re-encode byte for byte.
fn check_skey(skey: &str, expect: &str) {
    let got = outcome(NoteSigner::from_skey(skey), |s| {
        assert_eq!(s.to_skey(), skey);
        format!("{} {:08x}", s.name(), s.key_id())
    });
    assert_eq!(got, expect, "parsing skey {skey:?}");
}

/// Opens a note; on success the text must be the note up to its last blank line.
fn check_open(note: &str, vkeys: &[&str], expect: &str) {
    let known: Vec<NoteVerifier> = vkeys
        .iter()
        .map(|k| NoteVerifier::from_vkey(k).unwrap())
        .collect();
    let got = outcome(open_note(note, &known), |opened| {
        let rest = note.strip_prefix(opened.text()).unwrap();
        assert!(rest.starts_with("\n\u{2014} "), "text of {note:?}");
        assert!(!rest.contains("\n\n"), "text of {note:?}");
        format!("text ok; signers [{}]", opened.signers().join(", "))
    });
    assert_eq!(got, expect, "opening {note:?}");
}

fn check_open_vector(v: &OpenVector) {
    let mut note = v.note.clone();
    if let Some(repeat) = &v.repeat {
        note.push_str(&repeat.line.repeat(repeat.times));
    }
    let vkeys: Vec<&str> = v.vkeys.iter().map(String::as_str).collect();
    check_open(&note, &vkeys, &v.expect);
    if let Some(text) = &v.text {
        let known: Vec<NoteVerifier> = vkeys
            .iter()
            .map(|k| NoteVerifier::from_vkey(k).unwrap())
            .collect();
        assert_eq!(open_note(&note, &known).unwrap().text(), text, "{}", v.from);
    }
}

fn go_vectors() -> GoVectors {
    serde_json::from_str(GO_NOTE).unwrap()
}

/// A vkey with a correct key id for arbitrary public key bytes.
fn vkey_for(name: &str, public: &[u8; 32]) -> String {
    format!(
        "{name}+{:08x}+{}",
        key_id(name, public),
        BASE64.encode(typed_key(public))
    )
}

fn checkpoint(origin: &str, size: u64, root: u8) -> Checkpoint {
    Checkpoint::new(origin, size, [root; 32], Vec::new()).unwrap()
}

#[test]
fn checkpoint_bodies_round_trip() {
    check_body(
        &format!("thinkledger.local/abc\n0\n{ZERO_ROOT}\n"),
        &format!("thinkledger.local/abc 0 {ZERO_ROOT} []"),
    );
    check_body(
        &format!("o\n18446744073709551615\n{ZERO_ROOT}\n"),
        &format!("o 18446744073709551615 {ZERO_ROOT} []"),
    );
    check_body(
        &format!("é 🌳\n10\n{ZERO_ROOT}\nfirst ext\n+second\n"),
        &format!("é 🌳 10 {ZERO_ROOT} [\"first ext\", \"+second\"]"),
    );
    let built = Checkpoint::new("thinkledger.local/x", 42, [7; 32], vec!["e".into()]).unwrap();
    assert_eq!(Checkpoint::parse_body(&built.to_body()), Ok(built));
}

#[test]
fn c2sp_checkpoint_example_parses() {
    let vectors: C2spVectors = serde_json::from_str(C2SP).unwrap();
    for v in &vectors.checkpoints {
        check_body(&v.body, &format!("{} {} {} []", v.origin, v.size, v.root));
    }
}

#[test]
fn malformed_bodies_are_rejected() {
    let r = ZERO_ROOT;
    check_body("", "MissingFinalNewline");
    check_body(&format!("o\n1\n{r}"), "MissingFinalNewline");
    check_body("\n", "TooFewLines { found: 1 }");
    check_body("o\n1\n", "TooFewLines { found: 2 }");
    check_body(&format!("\n1\n{r}\n"), "EmptyOrigin");
    check_body(&format!("o\n\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n+1\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n-1\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n 1\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n1.0\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n\u{661}\n{r}\n"), "TreeSizeNotDecimal");
    check_body(&format!("o\n00\n{r}\n"), "TreeSizeLeadingZero");
    check_body(&format!("o\n012\n{r}\n"), "TreeSizeLeadingZero");
    check_body(
        &format!("o\n18446744073709551616\n{r}\n"),
        "TreeSizeTooLarge",
    );
    check_body("o\n1\n\n", "RootHashLength { len: 0 }");
    let unpadded = r.trim_end_matches('=');
    check_body(&format!("o\n1\n{unpadded}\n"), "RootHashNotBase64");
    let trailing_bits = format!("{}B=", &r[..42]);
    check_body(&format!("o\n1\n{trailing_bits}\n"), "RootHashNotBase64");
    let url_safe = format!("-{}", &r[1..]);
    check_body(&format!("o\n1\n{url_safe}\n"), "RootHashNotBase64");
    check_body(&format!("o\n1\n {r}\n"), "RootHashNotBase64");
    let short = BASE64.encode([0u8; 31]);
    check_body(&format!("o\n1\n{short}\n"), "RootHashLength { len: 31 }");
    let long = BASE64.encode([0u8; 33]);
    check_body(&format!("o\n1\n{long}\n"), "RootHashLength { len: 33 }");
    check_body(&format!("o\n1\n{r}\n\n"), "EmptyExtensionLine { line: 4 }");
    check_body(
        &format!("o\n1\n{r}\next\n\n"),
        "EmptyExtensionLine { line: 5 }",
    );
    check_body(&format!("o\r\n1\n{r}\n"), "ControlCharacter { line: 1 }");
    check_body(
        &format!("o\n1\n{r}\na\tb\n"),
        "ControlCharacter { line: 4 }",
    );
}

#[test]
fn new_rejects_what_parse_would_reject() {
    let new = |origin: &str, extensions: &[&str]| {
        let extensions = extensions.iter().map(|e| (*e).to_owned()).collect();
        outcome(Checkpoint::new(origin, 1, [0; 32], extensions), |c| {
            c.to_body()
        })
    };
    assert_eq!(new("", &[]), "EmptyOrigin");
    assert_eq!(new("a\nb", &[]), "LineBreakInField { line: 1 }");
    assert_eq!(new("a\rb", &[]), "ControlCharacter { line: 1 }");
    assert_eq!(new("o", &[""]), "EmptyExtensionLine { line: 4 }");
    assert_eq!(new("o", &["x\n"]), "LineBreakInField { line: 4 }");
    assert_eq!(new("o", &["x", "\u{1}"]), "ControlCharacter { line: 5 }");
    assert_eq!(new("o", &["x"]), format!("o\n1\n{ZERO_ROOT}\nx\n"));
}

#[test]
fn relation_tells_which_check_applies() {
    let a = checkpoint("log/a", 5, 1);
    assert_eq!(a.relation(&checkpoint("log/a", 5, 1)), Relation::SameTree);
    assert_eq!(a.relation(&checkpoint("log/a", 5, 2)), Relation::Fork);
    assert_eq!(
        a.relation(&checkpoint("log/b", 5, 1)),
        Relation::DifferentLogs
    );
    let grows = Relation::NeedsConsistencyProof {
        old_size: 5,
        new_size: 9,
    };
    assert_eq!(a.relation(&checkpoint("log/a", 9, 3)), grows);
    assert_eq!(checkpoint("log/a", 9, 3).relation(&a), grows);
    let with_extension = Checkpoint::new("log/a", 5, [1; 32], vec!["x".into()]).unwrap();
    assert_eq!(a.relation(&with_extension), Relation::SameTree);
}

#[test]
fn go_note_keys_parse_and_re_encode() {
    for key in go_vectors().keys {
        let expect = format!("{} {}", key.name, key.key_id);
        check_vkey(&key.vkey, &expect);
        check_skey(&key.skey, &expect);
        // For EnochRoot this confirms the derived all-zero seed is the published key.
        let signer = NoteSigner::from_skey(&key.skey).unwrap();
        assert_eq!(signer.verifier().to_vkey(), key.vkey);
    }
}

#[test]
fn go_note_signatures_match_byte_for_byte() {
    for v in go_vectors().sign {
        let signer = NoteSigner::from_skey(&v.skey).unwrap();
        assert_eq!(sign_note(&signer, &v.text).unwrap(), v.signed);
        check_open(
            &v.signed,
            &[&signer.verifier().to_vkey()],
            &format!("text ok; signers [{}]", signer.name()),
        );
    }
}

#[test]
fn go_note_open_cases() {
    for v in &go_vectors().open {
        check_open_vector(v);
    }
}

#[test]
fn c2sp_note_examples() {
    let vectors: C2spVectors = serde_json::from_str(C2SP).unwrap();
    for v in &vectors.open {
        check_open_vector(v);
    }
}

#[test]
fn go_bad_keys_are_rejected() {
    for v in go_vectors().bad_keys {
        check_vkey(&v.vkey, &v.expect);
    }
}

/// As Go's TestNewVerifier and TestNewSigner: every proper substring of a valid key, and
/// the key with any one byte incremented, is rejected.
#[test]
fn mangled_go_keys_are_rejected() {
    for key in go_vectors().keys {
        type Parse = fn(&str) -> Result<String, CheckpointError>;
        let parsers: [(&str, Parse); 2] = [
            (&key.vkey, |k| {
                NoteVerifier::from_vkey(k).map(|v| v.to_vkey())
            }),
            (&key.skey, |k| NoteSigner::from_skey(k).map(|s| s.to_skey())),
        ];
        for (text, parse) in parsers {
            let bytes = text.as_bytes();
            for i in 0..bytes.len() {
                for j in i + 1..=bytes.len() {
                    if (i, j) != (0, bytes.len()) {
                        let part = std::str::from_utf8(&bytes[i..j]).unwrap();
                        assert!(parse(part).is_err(), "accepted {part:?}");
                    }
                }
                let mut changed = bytes.to_vec();
                changed[i] += 1;
                let changed = String::from_utf8(changed).unwrap();
                assert!(parse(&changed).is_err(), "accepted {changed:?}");
            }
        }
    }
}

#[test]
fn malformed_keys_are_rejected_precisely() {
    let key = "ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    check_vkey(PETER_VKEY, "PeterNeumann c74f20a3");
    check_vkey("", "KeyFormat");
    check_vkey("PeterNeumann", "KeyFormat");
    check_vkey("PeterNeumann+c74f20a3", "KeyFormat");
    check_vkey(&format!("+c74f20a3+{key}"), "InvalidKeyName");
    check_vkey(
        &format!("Peter\u{a0}Neumann+c74f20a3+{key}"),
        "InvalidKeyName",
    );
    check_vkey(&format!("Peter\tNeumann+c74f20a3+{key}"), "InvalidKeyName");
    check_vkey(&format!("PeterNeumann+C74F20A3+{key}"), "KeyIdNotHex");
    check_vkey(&format!("PeterNeumann+c74f20a+{key}"), "KeyIdNotHex");
    check_vkey(&format!("PeterNeumann+c74f20a33+{key}"), "KeyIdNotHex");
    check_vkey(&format!("PeterNeumann++74f20a3+{key}"), "KeyIdNotHex");
    check_vkey(&format!("PeterNeumann+c74f20a3+{key}="), "KeyNotBase64");
    check_vkey(&format!("PeterNeumann+c74f20a3+{key} "), "KeyNotBase64");
    check_vkey("PeterNeumann+c74f20a3+", "KeyLength { len: 0 }");
    check_vkey(
        &format!("PeterNeumann+00000000+{key}"),
        &format!(
            "KeyIdMismatch {{ stated: 0, computed: {} }}",
            0xc74f20a3_u32
        ),
    );
    let mut identity = [0u8; 32];
    identity[0] = 1;
    check_vkey(&vkey_for("small", &identity), "InvalidPublicKey");
    let mut off_curve = [0u8; 32];
    off_curve[0] = 2;
    check_vkey(&vkey_for("offcurve", &off_curve), "InvalidPublicKey");

    check_skey(PETER_SKEY, "PeterNeumann c74f20a3");
    check_skey(PETER_VKEY, "KeyFormat");
    check_skey(&PETER_SKEY.to_lowercase(), "KeyFormat");
    check_skey(
        &PETER_SKEY.replace("c74f20a3", "c74f20a4"),
        &format!(
            "KeyIdMismatch {{ stated: {}, computed: {} }}",
            0xc74f20a4_u32, 0xc74f20a3_u32
        ),
    );
    let seed_type_2 = BASE64.encode([[2u8].as_slice(), &[0; 32]].concat());
    check_skey(
        &format!("PRIVATE+KEY+x+00000000+{seed_type_2}"),
        "UnknownKeyType { type_byte: 2 }",
    );
    let short_seed = BASE64.encode([1u8; 32]);
    check_skey(
        &format!("PRIVATE+KEY+x+00000000+{short_seed}"),
        "KeyLength { len: 32 }",
    );
    for name in ["", "a b", "a+b", "a\u{2003}b", "a\u{1}b"] {
        assert_eq!(
            outcome(NoteSigner::generate(name), |s| s.to_skey()),
            "InvalidKeyName"
        );
    }
}

#[test]
fn generated_keys_round_trip_and_sign_checkpoints() {
    let signer = NoteSigner::generate("thinkledger.local/ledger-1").unwrap();
    let again = NoteSigner::from_skey(&signer.to_skey()).unwrap();
    let vkey = signer.verifier().to_vkey();
    assert_eq!(again.verifier().to_vkey(), vkey);
    assert_eq!(NoteVerifier::from_vkey(&vkey), Ok(signer.verifier()));
    assert_ne!(
        NoteSigner::generate("thinkledger.local/ledger-1")
            .unwrap()
            .to_skey(),
        signer.to_skey()
    );

    let cp = Checkpoint::new("thinkledger.local/ledger-1", 3, [9; 32], Vec::new()).unwrap();
    let note = sign_checkpoint(&signer, &cp);
    assert_eq!(Ok(note.clone()), sign_note(&signer, &cp.to_body()));
    let opened = open_note(&note, &[signer.verifier()]).unwrap();
    assert_eq!(opened.signers(), ["thinkledger.local/ledger-1"]);
    assert_eq!(Checkpoint::parse_body(opened.text()), Ok(cp));
}

#[test]
fn debug_output_hides_the_secret() {
    let signer = NoteSigner::from_skey(PETER_SKEY).unwrap();
    let shown = format!("{signer:?}");
    assert_eq!(
        shown,
        "NoteSigner { name: \"PeterNeumann\", key_id: c74f20a3, .. }"
    );
    assert_eq!(
        format!("{:?}", signer.verifier()),
        format!("NoteVerifier(\"{PETER_VKEY}\")")
    );
}

/// A note without its last signature line (the text and blank line, minus the final
/// newline), and that line's decoded key id and signature.
fn last_signature(note: &str) -> (&str, Vec<u8>) {
    let (body, line) = note.rsplit_once("\n— ").unwrap();
    let encoded = line.split_once(' ').unwrap().1.trim_end();
    (body, BASE64.decode(encoded).unwrap())
}

#[test]
fn tampered_notes_fail_to_open() {
    let peter = NoteSigner::from_skey(PETER_SKEY).unwrap();
    let enoch = NoteSigner::from_skey(ENOCH_SKEY).unwrap();
    let cp = Checkpoint::new("thinkledger.local/t", 41, [5; 32], Vec::new()).unwrap();
    let note = sign_checkpoint(&peter, &cp);
    let peter_only = [peter.verifier()];
    let ok = "text ok; signers [PeterNeumann]";
    let invalid = peter_invalid();
    let outcome_of = |note: &str| outcome(open_note(note, &peter_only), |_| ok.to_owned());
    assert_eq!(outcome_of(&note), ok);

    // Signed by another key: unknown to the verifier, so nothing verifies.
    let by_enoch = sign_checkpoint(&enoch, &cp);
    assert_eq!(outcome_of(&by_enoch), "NoVerifiedSignature");

    // Another key's signature under Peter's name and key id.
    let (body, raw) = last_signature(&by_enoch);
    let forged = [&peter.key_id().to_be_bytes()[..], &raw[4..]].concat();
    let forged = format!("{body}\n— PeterNeumann {}\n", BASE64.encode(forged));
    assert_eq!(outcome_of(&forged), invalid);

    // A modified body.
    let modified = note.replacen("\n41\n", "\n42\n", 1);
    assert_ne!(modified, note);
    assert_eq!(outcome_of(&modified), invalid);

    // Every flipped bit of the signature line's bytes: in the key id the key is unknown, in
    // the signature it fails to verify.
    let (body, raw) = last_signature(&note);
    for byte in 0..raw.len() {
        for bit in 0..8 {
            let mut flipped = raw.clone();
            flipped[byte] ^= 1 << bit;
            let note = format!("{body}\n— PeterNeumann {}\n", BASE64.encode(flipped));
            let expect = if byte < 4 {
                "NoVerifiedSignature"
            } else {
                &invalid
            };
            assert_eq!(outcome_of(&note), expect, "byte {byte} bit {bit}");
        }
    }
}

/// Opens `TEXT`, a blank line and `block` (starting on line 4), knowing Peter's key.
fn check_signature_block(block: &str, expect: &str) {
    check_open(&format!("{TEXT}\n{block}"), &[PETER_VKEY], expect);
}

/// The error for a signature that claims Peter's key and does not verify.
fn peter_invalid() -> String {
    format!(
        "InvalidSignature {{ name: \"PeterNeumann\", key_id: {} }}",
        0xc74f20a3_u32
    )
}

#[test]
fn malformed_signature_lines_are_rejected() {
    let sig = PETER_SIG;
    let unpadded = sig.trim_end_matches('=');
    // Peter's key id and then 2 bytes: a known key, so it must verify, and cannot.
    let truncated = "x08go/ZJ";
    // Another key's signature (of another type and length) under Peter's name.
    let foreign = BASE64.encode([1u8; 80]);
    let ok = "text ok; signers [PeterNeumann]";
    for (block, expect) in [
        (format!("— PeterNeumann {sig}\n"), ok),
        (
            format!("— PeterNeumann {foreign}\n— PeterNeumann {sig}\n"),
            ok,
        ),
        (
            "— PeterNeumann\n".to_owned(),
            "NotASignatureLine { line: 4 }",
        ),
        (
            format!("-- PeterNeumann {sig}\n"),
            "NotASignatureLine { line: 4 }",
        ),
        (
            format!("—PeterNeumann {sig}\n"),
            "NotASignatureLine { line: 4 }",
        ),
        (
            format!("— PeterNeumann {sig}\nnot a signature\n"),
            "NotASignatureLine { line: 5 }",
        ),
        (format!("—  {sig}\n"), "InvalidSignerName { line: 4 }"),
        (
            format!("— Peter+Neumann {sig}\n"),
            "InvalidSignerName { line: 4 }",
        ),
        (
            format!("— PeterNeumann {sig} \n"),
            "SignatureNotBase64 { line: 4 }",
        ),
        (
            format!("— PeterNeumann {unpadded}\n"),
            "SignatureNotBase64 { line: 4 }",
        ),
        (
            "— PeterNeumann \n".to_owned(),
            "SignatureTooShort { line: 4 }",
        ),
        (
            "— PeterNeumann AAAAAA==\n".to_owned(),
            "SignatureTooShort { line: 4 }",
        ),
        (format!("— PeterNeumann {truncated}\n"), &peter_invalid()),
        (
            format!("— PeterNeumann\t{sig}\n"),
            "ControlCharacter { line: 4 }",
        ),
        (format!("— PeterNeumann {sig}\n").repeat(MAX_SIGNATURES), ok),
        (
            format!("— PeterNeumann {sig}\n").repeat(MAX_SIGNATURES + 1),
            "TooManySignatures { max: 100 }",
        ),
    ] {
        check_signature_block(&block, expect);
    }
}

#[test]
fn two_different_keys_under_one_name_and_id_are_ambiguous() {
    let peter = NoteVerifier::from_vkey(PETER_VKEY).unwrap();
    let impostor = NoteVerifier {
        key: NoteSigner::from_skey(ENOCH_SKEY).unwrap().verifier().key,
        ..peter.clone()
    };
    let note = format!("{TEXT}\n\u{2014} PeterNeumann {PETER_SIG}\n");
    assert_eq!(
        outcome(open_note(&note, &[peter, impostor]), |_| String::new()),
        format!(
            "AmbiguousKey {{ name: \"PeterNeumann\", key_id: {} }}",
            0xc74f20a3_u32
        )
    );
}

#[test]
fn sign_note_takes_only_valid_note_text() {
    let signer = NoteSigner::from_skey(PETER_SKEY).unwrap();
    let sign = |text: &str| outcome(sign_note(&signer, text), |note| note);
    assert_eq!(sign(""), "MissingFinalNewline");
    assert_eq!(sign("abc"), "MissingFinalNewline");
    assert_eq!(sign("a\tb\n"), "ControlCharacter { line: 1 }");
    // A text with blank lines of its own still opens to itself.
    for text in ["a\n\nb\n", "\n", "a\n\n"] {
        let opened = open_note(&sign(text), &[signer.verifier()]).unwrap();
        assert_eq!(opened.into_text(), text);
    }
}

#[test]
fn a_verifier_key_splits_at_its_first_two_plus_signs() {
    // About half of all keys have a `+` in their base64.
    let signer = (0..200)
        .map(|_| NoteSigner::generate("thinkledger/x").expect("key"))
        .find(|s| {
            let vkey = s.verifier().to_vkey();
            vkey.splitn(3, '+').nth(2).is_some_and(|b| b.contains('+'))
        })
        .expect("a key whose base64 holds a +");
    let vkey = signer.verifier().to_vkey();
    let parsed = NoteVerifier::from_vkey(&vkey).expect("parses");
    assert_eq!(parsed.name(), "thinkledger/x");
    assert_eq!(
        format!("{:08x}", parsed.key_id()),
        vkey.split('+').nth(1).expect("id")
    );
    assert_eq!(parsed.to_vkey(), vkey);
    // The name cannot hold a `+`, and the key id is exactly 8 hex digits.
    assert!(NoteSigner::generate("a+b").is_err());
    let short_id = vkey.replacen(&format!("+{:08x}+", parsed.key_id()), "+0+", 1);
    assert!(NoteVerifier::from_vkey(&short_id).is_err());
}

#[test]
fn a_kept_note_is_put_back_in_its_signed_form() {
    let signer = NoteSigner::generate("thinkledger/x").expect("key");
    let note = sign_note(&signer, "a\nb\n").expect("sign");
    assert!(matches!(kept_note(&note), std::borrow::Cow::Borrowed(_)));
    for saved in [
        format!("{note}\n"),
        format!("{note}\n\n\n"),
        note.replace('\n', "\r\n"),
        format!("{}\r\n", note.replace('\n', "\r\n")),
    ] {
        assert_eq!(kept_note(&saved), note, "{saved:?}");
        assert!(open_note(&kept_note(&saved), &[signer.verifier()]).is_ok());
    }
    // A note cut short stays short: nothing is added but the one final newline.
    let cut = note.trim_end_matches('\n');
    assert_eq!(kept_note(cut), note);
}
