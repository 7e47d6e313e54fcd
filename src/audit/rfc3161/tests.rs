//! Tokens made by OpenSSL's own TSA (`openssl ts -reply`, with the CA and TSA of
//! tests/tsa/make-tsa.sh) over the SHA-256 of `hello checkpoint\n`, checked offline. The
//! vectors in tests/data/tsa/ were made with, for KIND in rsa and ec:
//!
//! ```text
//! sh tests/tsa/make-tsa.sh DIR KIND && cd DIR && printf 'hello checkpoint\n' > msg
//! openssl ts -query -data msg -sha256 -cert -out query.tsq
//! openssl ts -reply -config tsa.cnf -queryfile query.tsq -token_out -out KIND-token.der
//! openssl ts -reply -config tsa.cnf -queryfile query.tsq -out KIND-response.tsr   # another reply
//! cp ca.pem KIND-ca.pem
//! ```
//!
//! `rsa-not-a-tsa-token.der` holds the TSTInfo of `rsa-token.der` signed as CMS by the CA
//! itself, which has no time-stamping usage (OpenSSL's `ts -verify` refuses it too:
//! "unsuitable certificate purpose"):
//!
//! ```text
//! openssl asn1parse -inform DER -in rsa-token.der -strparse 62 -noout -out tst.der
//! openssl cms -sign -binary -in tst.der -econtent_type 1.2.840.113549.1.9.16.1.4 \
//!     -signer ca.pem -inkey ca.key -outform DER -nodetach -md sha256 -out rsa-not-a-tsa-token.der
//! ```
//!
//! and `chain-*` by hand the same way with a P-256 TSA whose certificate a root CA's
//! intermediate issued, the intermediate carried in the token (`certs = $dir/mid.pem` in
//! tsa.cnf), so that only the root is trusted.

use sha2::{Digest, Sha256};

use super::*;

const RSA_TOKEN: &[u8] = include_bytes!("../../../tests/data/tsa/rsa-token.der");
const RSA_RESPONSE: &[u8] = include_bytes!("../../../tests/data/tsa/rsa-response.tsr");
const RSA_CA: &[u8] = include_bytes!("../../../tests/data/tsa/rsa-ca.pem");
const EC_TOKEN: &[u8] = include_bytes!("../../../tests/data/tsa/ec-token.der");
const EC_CA: &[u8] = include_bytes!("../../../tests/data/tsa/ec-ca.pem");
const NOT_A_TSA_TOKEN: &[u8] = include_bytes!("../../../tests/data/tsa/rsa-not-a-tsa-token.der");
const CHAIN_TOKEN: &[u8] = include_bytes!("../../../tests/data/tsa/chain-token.der");
const CHAIN_ROOT: &[u8] = include_bytes!("../../../tests/data/tsa/chain-root.pem");
const CHAIN_TSA: &[u8] = include_bytes!("../../../tests/data/tsa/chain-tsa.pem");

fn digest() -> [u8; 32] {
    Sha256::digest(b"hello checkpoint\n").into()
}

/// The outcome of checking `token` for `digest` against the CA in `ca`, as a line: `ok <time>
/// <signer>` or the problem code and message.
fn check(token: &[u8], digest: &[u8; 32], ca: &[u8]) -> String {
    let trusted = read_certificates(ca).expect("the CA reads");
    match check_token(token, digest, &trusted) {
        Ok(stamp) => format!("ok {} {}", stamp.gen_time, stamp.signer),
        Err(e) => format!("{} {e}", e.code()),
    }
}

#[test]
fn openssl_tokens_verify_against_their_ca() {
    assert_eq!(
        check(RSA_TOKEN, &digest(), RSA_CA),
        "ok 2026-11-28T10:56:21Z CN=thinkledger test TSA"
    );
    assert!(check(EC_TOKEN, &digest(), EC_CA).starts_with("ok 2026-11-28T10:56:"));
}

#[test]
fn the_signer_chains_to_a_root_through_an_intermediate_the_token_carries() {
    assert!(check(CHAIN_TOKEN, &digest(), CHAIN_ROOT).starts_with("ok 2026-11-28T"));
    // The TSA's own certificate, trusted as itself, will do as well.
    assert!(check(CHAIN_TOKEN, &digest(), CHAIN_TSA).starts_with("ok 2026-11-28T"));
    let got = check(CHAIN_TOKEN, &digest(), RSA_CA);
    assert!(got.starts_with("timestamp_untrusted "), "{got}");
}

#[test]
fn a_signer_without_the_time_stamping_usage_is_no_tsa() {
    let got = check(NOT_A_TSA_TOKEN, &digest(), RSA_CA);
    assert!(
        got.starts_with("timestamp_untrusted ") && got.contains("not a time-stamping certificate"),
        "{got}"
    );
}

#[test]
fn another_ca_is_not_trusted() {
    let got = check(RSA_TOKEN, &digest(), EC_CA);
    assert!(got.starts_with("timestamp_untrusted "), "{got}");
    let got = check(EC_TOKEN, &digest(), RSA_CA);
    assert!(got.starts_with("timestamp_untrusted "), "{got}");
}

#[test]
fn a_token_for_another_digest_is_refused() {
    let mut other = digest();
    other[0] ^= 1;
    let got = check(RSA_TOKEN, &other, RSA_CA);
    assert!(got.starts_with("timestamp_imprint "), "{got}");
}

#[test]
fn a_changed_byte_fails_where_it_is_signed_and_none_panics() {
    // The last byte is the signature's; a byte of the TSTInfo (found by its genTime text)
    // changes the message digest; the first byte breaks the DER.
    let at_time = RSA_TOKEN
        .windows(14)
        .position(|w| w == b"20261128105621")
        .expect("genTime in the token");
    for (at, code) in [
        (RSA_TOKEN.len() - 1, "timestamp_signature"),
        (at_time + 13, "timestamp_signature"),
        (0, "timestamp_malformed"),
    ] {
        let mut token = RSA_TOKEN.to_vec();
        token[at] ^= 0x01;
        let got = check(&token, &digest(), RSA_CA);
        assert!(got.starts_with(code), "byte {at}: {got}");
    }
    // No byte changed anywhere makes a panic.
    for at in 0..RSA_TOKEN.len() {
        let mut token = RSA_TOKEN.to_vec();
        token[at] ^= 0x80;
        let _ = check(&token, &digest(), RSA_CA);
    }
}

#[test]
fn the_token_is_taken_out_of_the_response() {
    // (A reply of its own to the same query: another serial number, the same stamp.)
    let token = token_from_response(RSA_RESPONSE).expect("granted");
    assert!(check(&token, &digest(), RSA_CA).starts_with("ok 2026-11-28T10:56:"));
    assert!(matches!(
        token_from_response(b"\x30\x03\x02\x01\x02"),
        Err(TokenError::Malformed(_))
    ));
}

#[test]
fn the_request_stamps_the_digest_and_asks_for_the_certificate() {
    let der = request(&digest(), [0xff; 8]).expect("encodes");
    let req = TimeStampReq::from_der(&der).expect("decodes");
    assert_eq!(req.message_imprint.hashed_message.as_bytes(), digest());
    assert_eq!(req.message_imprint.hash_algorithm.oid, ID_SHA_256);
    assert!(req.cert_req);
    assert_eq!(
        req.nonce.map(|n| n.as_bytes().to_vec()),
        Some(vec![0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    );
}

#[test]
fn certificates_that_do_not_read_say_so() {
    assert!(read_certificates(b"-----BEGIN NONSENSE-----\n").is_err());
    assert!(read_certificates(b"not a certificate").is_err());
    assert_eq!(read_certificates(RSA_CA).map(|c| c.len()), Ok(1));
}
