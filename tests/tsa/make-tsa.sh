#!/bin/sh
# Makes a throwaway certificate authority and an RFC 3161 time-stamping authority signed by it,
# with OpenSSL, in DIR: ca.pem (the certificate a reviewer trusts: `verify-export --tsa-cert`),
# tsa.pem and tsa.key (the TSA's certificate, with the critical id-kp-timeStamping extended key
# usage, and its key) and tsa.cnf (the `openssl ts -reply -config` file). KIND is rsa (RSA
# 2048) or ec (P-256) for the TSA's key; the CA is RSA either way.
# Used by tests/it/timestamping.rs, and made the vectors in tests/data/tsa/ (src/audit/rfc3161/tests.rs
# says how).
set -eu
dir=$1
kind=${2:-rsa}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 \
    -subj "/CN=thinkledger test TSA CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
case $kind in
    rsa) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out tsa.key 2>/dev/null ;;
    ec) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out tsa.key 2>/dev/null ;;
    *) echo "KIND is rsa or ec" >&2; exit 1 ;;
esac
openssl req -new -key tsa.key -out tsa.csr -subj "/CN=thinkledger test TSA" 2>/dev/null
printf '%s\n' "extendedKeyUsage=critical,timeStamping" "keyUsage=critical,digitalSignature" \
    > tsa.ext
openssl x509 -req -in tsa.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out tsa.pem \
    -days 3650 -sha256 -extfile tsa.ext 2>/dev/null
echo 01 > tsaserial
cat > tsa.cnf <<CNF
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = .
serial = \$dir/tsaserial
crypto_device = builtin
signer_cert = \$dir/tsa.pem
signer_key = \$dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256
accuracy = secs:1
clock_precision_digits = 0
ordering = no
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
CNF
