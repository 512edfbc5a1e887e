"""Verifies a Forgebench agent card signature with an implementation other than the gateway's:
Python `cryptography` for Ed25519 and `rfc8785` for JSON canonicalization.

A card may carry several signatures (A2A 1.0 section 8.4.3). The one checked here covers the whole
card: its payload is RFC 8785 of the card without `signatures`, every field included (the seed's
`url` too). The card is valid when one of its signatures holds over that payload; the gateway's
other signature covers the card's A2A canonical form, which an A2A SDK verifier checks
(`verify_card_a2a.py`) and which never holds here. Every entry must still name EdDSA and a key of
the JWKS.

usage: verify_card.py CARD_JSON JWKS_JSON   (exit 0: valid; 1: invalid, with the reason)
"""
import base64
import json
import sys

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verify(card: dict, jwks: dict) -> str | None:
    signatures = card.get("signatures")
    if not signatures:
        return "no signatures"
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    payload = b64url_encode(rfc8785.dumps(unsigned))
    holds = False
    for entry in signatures:
        header = json.loads(b64url_decode(entry["protected"]))
        if header.get("alg") != "EdDSA" or header.get("typ") != "JOSE":
            return f"unexpected header {header}"
        keys = [k for k in jwks["keys"] if k.get("kid") == header.get("kid")]
        if not keys:
            return f"no key {header.get('kid')} in the JWKS"
        key = keys[0]
        if key.get("kty") != "OKP" or key.get("crv") != "Ed25519":
            return f"unexpected key {key}"
        public = Ed25519PublicKey.from_public_bytes(b64url_decode(key["x"]))
        signing_input = f"{entry['protected']}.{payload}".encode()
        try:
            public.verify(b64url_decode(entry["signature"]), signing_input)
            holds = True
        except InvalidSignature:
            continue
    return None if holds else "no signature verifies over the whole card"


def main() -> int:
    with open(sys.argv[1]) as card_file, open(sys.argv[2]) as jwks_file:
        problem = verify(json.load(card_file), json.load(jwks_file))
    if problem:
        print(problem)
        return 1
    print("valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
