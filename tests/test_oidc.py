"""The verifier of the identity provider's bearer tokens (service/players/oidc.py),
against a real identity provider in miniature: RSA and EC keys made here, their JSON Web
Key Set and the discovery document served over HTTP on 127.0.0.1 by a threaded
``http.server``, which counts the requests it answers.  Nothing of the verifier or of
PyJWT is replaced.

- a good token (RSA or EC) proves ``(iss, sub)``, found through the key set's URL or
  through the discovery document (read once);
- every refusal has its code: expired, not yet valid, a signature by another key, a key
  the provider does not publish, another audience or issuer, a missing claim, an
  unsigned token (``alg: none``), an HMAC "signed" with the public key as its secret, a
  token too large (refused before the provider is asked anything), malformed text;
- the keys rotate: a token of the new key is verified (the set fetched again), one of
  the old key is refused;
- a flood of tokens with made-up key ids fetches the set at most once more per
  ``refetch_seconds``, from many threads at once;
- a provider down, failing or serving no key set: ``identity_provider_unavailable``, and
  not asked again before ``refetch_seconds``;
- no refusal's message, nor its traceback, holds the token."""

import base64
import hashlib
import hmac
import json
import secrets
import socket
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from service.players.oidc import (
    PROVIDER_UNAVAILABLE,
    InvalidIdentity,
    OidcVerifier,
    verifier_from_config,
)

AUDIENCE = "patience-server"
SUBJECT = "player-7"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(number: int) -> str:
    return _b64(number.to_bytes((number.bit_length() + 7) // 8, "big"))


def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(kid: str, private_key) -> dict:
    """The public half of ``private_key`` as a JSON Web Key, written out here."""
    numbers = private_key.public_key().public_numbers()
    if isinstance(private_key, rsa.RSAPrivateKey):
        return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                "n": _uint(numbers.n), "e": _uint(numbers.e)}
    return {"kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")), "y": _b64(numbers.y.to_bytes(32, "big"))}


class Provider:
    """An identity provider in miniature: ``/.well-known/openid-configuration`` and
    ``/jwks`` (the public halves of :attr:`keys`), over HTTP; :attr:`requests` counts
    what it answered, by path; :attr:`status` other than 200 makes ``/jwks`` fail and
    :attr:`body`, when set, is served there instead of the key set."""

    def __init__(self):
        self.keys: dict[str, object] = {}
        self.requests: Counter[str] = Counter()
        self.status = 200
        self.body: bytes | None = None
        self.issuer_named: str | None = None
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                provider.requests[self.path] += 1
                if self.path == "/.well-known/openid-configuration":
                    status, body = 200, json.dumps({
                        "issuer": provider.issuer_named or provider.url,
                        "jwks_uri": provider.jwks_url}).encode()
                elif self.path == "/jwks":
                    keys = [public_jwk(kid, key) for kid, key in list(provider.keys.items())]
                    status = provider.status
                    body = provider.body or json.dumps({"keys": keys}).encode()
                else:
                    status, body = 404, b"{}"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.jwks_url = f"{self.url}/jwks"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    @property
    def jwks_fetches(self) -> int:
        return self.requests["/jwks"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def token(self, kid: str | None = None, *, key=None, algorithm: str | None = None,
              headers: dict | None = None, **claims) -> str:
        """A token signed with the key ``kid`` (or with ``key``, naming ``kid``)."""
        if kid is None:
            kid = next(iter(self.keys))
        key = key if key is not None else self.keys[kid]
        if algorithm is None:
            algorithm = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
        now = int(time.time())
        payload = {"iss": self.url, "sub": SUBJECT, "aud": AUDIENCE, "iat": now,
                   "exp": now + 300} | claims
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, key, algorithm=algorithm,
                          headers={"kid": kid} | (headers or {}))


@pytest.fixture
def provider():
    provider = Provider()
    provider.keys["rsa-1"] = rsa_key()
    provider.keys["ec-1"] = ec_key()
    yield provider
    provider.close()


def verifier(provider, **settings) -> OidcVerifier:
    settings = {"jwks_url": provider.jwks_url} | settings
    return OidcVerifier(provider.url, AUDIENCE, **settings)


def refused(verifier: OidcVerifier, token, code: str) -> InvalidIdentity:
    """The refusal of ``token``, with ``code``; neither its message nor its traceback
    holds the token."""
    with pytest.raises(InvalidIdentity) as caught:
        verifier.verify(token)
    error = caught.value
    assert error.code == code, error
    if isinstance(token, str) and token:
        told = [str(error), error.detail, repr(error),
                "".join(traceback.format_exception(error))]
        for text in told:
            assert token not in text
            for part in token.split("."):
                assert len(part) < 12 or part not in text
    return error


def test_a_good_token_proves_its_issuer_and_subject(provider):
    verifying = verifier(provider)
    assert verifying.verify(provider.token("rsa-1")) == (provider.url, SUBJECT)
    assert verifying.verify(provider.token("ec-1", sub="player-8")) == (provider.url,
                                                                          "player-8")
    assert verifying.verify(provider.token("rsa-1", aud=["other", AUDIENCE])) == \
        (provider.url, SUBJECT)
    assert provider.jwks_fetches == 1  # the key set is kept


def test_an_expired_token_is_refused_past_the_leeway(provider):
    verifying = verifier(provider)
    now = int(time.time())
    refused(verifying, provider.token(exp=now - 120, iat=now - 600), "token_expired")
    assert verifying.verify(provider.token(exp=now - 10, iat=now - 600))[1] == SUBJECT
    refused(verifier(provider, leeway=0), provider.token(exp=now - 10, iat=now - 600),
            "token_expired")


def test_a_token_not_yet_valid_is_refused(provider):
    verifying = verifier(provider)
    now = int(time.time())
    refused(verifying, provider.token(nbf=now + 120), "token_not_yet_valid")
    refused(verifying, provider.token(iat=now + 120), "token_not_yet_valid")
    assert verifying.verify(provider.token(nbf=now + 10))[1] == SUBJECT


def test_a_signature_by_another_key_is_refused(provider):
    """The token names a published key, but another key signed it."""
    verifying = verifier(provider)
    refused(verifying, provider.token("rsa-1", key=rsa_key()), "token_invalid")
    refused(verifying, provider.token("ec-1", key=ec_key()), "token_invalid")


def test_a_key_the_provider_does_not_publish_is_refused(provider):
    verifying = verifier(provider)
    error = refused(verifying, provider.token("rsa-unknown", key=rsa_key()), "token_invalid")
    assert "rsa-unknown" not in str(error)
    refused(verifying, provider.token(key=rsa_key(), headers={"kid": ""}), "token_invalid")
    unnamed = jwt.encode({"iss": provider.url, "sub": SUBJECT, "aud": AUDIENCE,
                          "exp": int(time.time()) + 60}, provider.keys["rsa-1"],
                         algorithm="RS256")
    refused(verifying, unnamed, "token_invalid")


def test_a_key_that_signs_with_another_algorithm_is_refused(provider):
    """An EC key named by a token that says RS256: the key decides, not the token."""
    verifying = verifier(provider, algorithms=("RS256", "ES256"))
    refused(verifying, provider.token("ec-1", key=provider.keys["rsa-1"]), "token_algorithm")


def test_another_audience_is_refused(provider):
    verifying = verifier(provider)
    refused(verifying, provider.token(aud="another-service"), "token_audience")
    refused(verifying, provider.token(aud=["a", "b"]), "token_audience")
    refused(verifying, provider.token(aud=None), "token_audience")


def test_another_issuer_is_refused(provider):
    verifying = verifier(provider)
    refused(verifying, provider.token(iss="https://elsewhere.example"), "token_issuer")
    refused(verifying, provider.token(iss=provider.url + "/"), "token_issuer")
    refused(verifying, provider.token(iss=None), "token_issuer")


@pytest.mark.parametrize("claim", ["exp", "sub"])
def test_a_token_without_a_required_claim_is_refused(provider, claim):
    refused(verifier(provider), provider.token(**{claim: None}), "token_invalid")


def test_an_empty_subject_is_refused(provider):
    refused(verifier(provider), provider.token(sub=""), "token_invalid")


def _unsigned(header: dict, payload: dict, signature: bytes = b"") -> str:
    return ".".join([_b64(json.dumps(header).encode()), _b64(json.dumps(payload).encode()),
                     _b64(signature)])


def test_an_unsigned_token_is_refused(provider):
    verifying = verifier(provider)
    payload = {"iss": provider.url, "sub": SUBJECT, "aud": AUDIENCE,
               "exp": int(time.time()) + 300}
    for alg in ("none", "None", "NONE"):
        refused(verifying, _unsigned({"alg": alg, "typ": "JWT", "kid": "rsa-1"}, payload),
                "token_algorithm")
    refused(verifying, _unsigned({"typ": "JWT", "kid": "rsa-1"}, payload), "token_algorithm")
    assert provider.jwks_fetches == 0  # refused before any key is looked up


def test_an_hmac_with_the_public_key_as_its_secret_is_refused(provider):
    """The classic confusion: the public key (PEM, or its JWK) used as an HS256 secret."""
    verifying = verifier(provider)
    public = provider.keys["rsa-1"].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    payload = {"iss": provider.url, "sub": SUBJECT, "aud": AUDIENCE,
               "exp": int(time.time()) + 300}
    for secret in (public, json.dumps(public_jwk("rsa-1", provider.keys["rsa-1"])).encode()):
        for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
            unsigned = _unsigned({"alg": alg, "typ": "JWT", "kid": "rsa-1"}, payload)
            signing_input = unsigned.rsplit(".", 1)[0]
            signature = hmac.new(secret, signing_input.encode(), digest).digest()
            refused(verifying, f"{signing_input}.{_b64(signature)}", "token_algorithm")


def test_shared_secret_algorithms_cannot_be_allowed(provider):
    for algorithms in (("RS256", "HS256"), ("none",), ("HS512",), ("RS257",), ()):
        with pytest.raises(ValueError, match="OIDC_ALGORITHMS"):
            verifier(provider, algorithms=algorithms)


def test_only_the_listed_algorithms_are_accepted(provider):
    verifying = verifier(provider, algorithms=("ES256",))
    refused(verifying, provider.token("rsa-1"), "token_algorithm")
    assert verifying.verify(provider.token("ec-1"))[1] == SUBJECT


def test_a_token_too_large_is_refused_before_anything_is_asked(provider):
    verifying = OidcVerifier(provider.url, AUDIENCE, max_token_bytes=8 * 1024)
    large = provider.token(padding="x" * 9000)
    refused(verifying, large, "token_too_large")
    refused(verifying, "a" * (8 * 1024 + 1), "token_too_large")
    assert sum(provider.requests.values()) == 0


@pytest.mark.parametrize("token", [
    "", "not a token", "a.b.c", "...", "a.b", "eyJhbGciOiJSUzI1NiJ9", "é.é.é",
    _b64(b"not json") + "." + _b64(b"{}") + ".",
    _b64(b"[1, 2]") + "." + _b64(b"{}") + ".",
    _b64(json.dumps({"alg": "RS256", "kid": 7}).encode()) + "." + _b64(b"{}") + ".",
])
def test_malformed_text_is_refused(provider, token):
    refused(verifier(provider), token, "token_invalid")


def test_a_signed_token_with_malformed_claims_is_refused(provider):
    verifying = verifier(provider)
    key = provider.keys["rsa-1"]
    garbage = jwt.api_jws.encode(b"not json", key, algorithm="RS256",
                                 headers={"kid": "rsa-1"})
    refused(verifying, garbage, "token_invalid")
    refused(verifying, provider.token(exp="tomorrow"), "token_invalid")
    refused(verifying, None, "token_invalid")
    refused(verifying, provider.token("rsa-1").encode(), "token_invalid")


def test_the_keys_rotate(provider):
    """The provider publishes a new key and drops the old one: a token of the new key
    fetches the set again and is verified; a token of the old key is refused."""
    verifying = verifier(provider, refetch_seconds=0.5)
    old = provider.token("rsa-1")
    assert verifying.verify(old)[1] == SUBJECT
    assert provider.jwks_fetches == 1
    del provider.keys["rsa-1"]
    provider.keys["rsa-2"] = rsa_key()
    time.sleep(0.6)
    assert verifying.verify(provider.token("rsa-2"))[1] == SUBJECT
    assert provider.jwks_fetches == 2
    refused(verifying, old, "token_invalid")
    assert provider.jwks_fetches == 2  # within refetch_seconds of the last fetch
    time.sleep(0.6)
    refused(verifying, old, "token_invalid")
    assert provider.jwks_fetches == 3


def test_a_new_key_waits_for_the_refetch_interval(provider):
    verifying = verifier(provider, refetch_seconds=60)
    verifying.verify(provider.token("rsa-1"))
    provider.keys["rsa-2"] = rsa_key()
    refused(verifying, provider.token("rsa-2"), "token_invalid")
    assert provider.jwks_fetches == 1


def test_the_kept_key_set_expires(provider):
    verifying = verifier(provider, jwks_cache_seconds=0.5)
    verifying.verify(provider.token("rsa-1"))
    verifying.verify(provider.token("rsa-1"))
    assert provider.jwks_fetches == 1
    time.sleep(0.6)
    verifying.verify(provider.token("rsa-1"))
    assert provider.jwks_fetches == 2


def test_a_flood_of_unknown_key_ids_fetches_the_set_at_most_once_more(provider):
    """100 tokens with made-up key ids, from 8 threads at once, on a fresh verifier and on
    one that has its keys: at most one fetch more than the first."""
    stranger = rsa_key()
    tokens = [provider.token(secrets.token_hex(8), key=stranger) for _ in range(100)]
    for warm in (False, True):
        provider.requests.clear()
        verifying = verifier(provider)
        if warm:
            verifying.verify(provider.token("rsa-1"))
        with ThreadPoolExecutor(max_workers=8) as pool:
            codes = [refusal.code for refusal in
                     pool.map(refused, [verifying] * 100, tokens, ["token_invalid"] * 100)]
        assert codes == ["token_invalid"] * 100
        assert provider.jwks_fetches <= 2, provider.requests
        assert verifying.verify(provider.token("ec-1"))[1] == SUBJECT


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_key_set_is_unavailable(provider):
    url = f"http://127.0.0.1:{_closed_port()}"
    verifying = OidcVerifier(url, AUDIENCE, jwks_url=f"{url}/jwks", timeout=1)
    error = refused(verifying, provider.token("rsa-1", iss=url), PROVIDER_UNAVAILABLE)
    assert error.code == "identity_provider_unavailable"
    assert error.retry_after == 10  # not asked again before refetch_seconds
    discovering = OidcVerifier(url, AUDIENCE, timeout=1)
    refused(discovering, provider.token("rsa-1", iss=url), PROVIDER_UNAVAILABLE)


@pytest.mark.parametrize(("status", "body"), [
    (500, None), (404, None), (200, b"not json"), (200, b"[]"), (200, b'{"keys": []}'),
    (200, b'{"keys": [{"kty": "RSA", "kid": "k", "use": "enc", "n": "AQAB", "e": "AQAB"}]}'),
])
def test_a_failing_key_set_is_unavailable_and_not_asked_again_at_once(provider, status, body):
    provider.status, provider.body = status, body
    verifying = verifier(provider, refetch_seconds=0.5)
    refused(verifying, provider.token("rsa-1"), PROVIDER_UNAVAILABLE)
    refused(verifying, provider.token("rsa-1"), PROVIDER_UNAVAILABLE)
    assert provider.jwks_fetches == 1
    provider.status, provider.body = 200, None
    time.sleep(0.6)
    assert verifying.verify(provider.token("rsa-1"))[1] == SUBJECT
    assert provider.jwks_fetches == 2


def test_a_hung_provider_times_out(provider):
    """A provider that accepts the connection and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        verifying = OidcVerifier(url, AUDIENCE, jwks_url=f"{url}/jwks", timeout=0.5)
        started = time.monotonic()
        refused(verifying, provider.token("rsa-1", iss=url), PROVIDER_UNAVAILABLE)
        assert time.monotonic() - started < 3


def test_the_key_set_is_found_through_the_discovery_document(provider):
    verifying = OidcVerifier(provider.url, AUDIENCE)
    assert sum(provider.requests.values()) == 0  # nothing is fetched before a token
    for kid in ("rsa-1", "ec-1", "rsa-1"):
        assert verifying.verify(provider.token(kid)) == (provider.url, SUBJECT)
    assert provider.requests == {"/.well-known/openid-configuration": 1, "/jwks": 1}


def test_a_discovery_document_of_another_issuer_is_unavailable(provider):
    provider.issuer_named = "https://elsewhere.example"
    verifying = OidcVerifier(provider.url, AUDIENCE, refetch_seconds=60)
    refused(verifying, provider.token("rsa-1"), PROVIDER_UNAVAILABLE)
    refused(verifying, provider.token("rsa-1"), PROVIDER_UNAVAILABLE)
    assert provider.requests == {"/.well-known/openid-configuration": 1}


def test_the_verifier_from_the_settings(provider):
    assert verifier_from_config({}) is None
    assert verifier_from_config({"OIDC_ISSUER": None, "OIDC_AUDIENCE": "x"}) is None
    built = verifier_from_config({"OIDC_ISSUER": provider.url, "OIDC_AUDIENCE": AUDIENCE,
                                  "OIDC_JWKS_URL": provider.jwks_url,
                                  "OIDC_ALGORITHMS": " ES256 , RS256 "})
    assert built.algorithms == ("ES256", "RS256")
    assert (built.leeway, built.jwks_cache_seconds, built.refetch_seconds, built.timeout,
            built.max_token_bytes) == (30, 300, 10.0, 2.0, 8192)
    assert built.verify(provider.token("ec-1")) == (provider.url, SUBJECT)
    with pytest.raises(ValueError, match="OIDC_AUDIENCE"):
        verifier_from_config({"OIDC_ISSUER": provider.url})
    with pytest.raises(ValueError, match="OIDC_ALGORITHMS"):
        verifier_from_config({"OIDC_ISSUER": provider.url, "OIDC_AUDIENCE": AUDIENCE,
                              "OIDC_ALGORITHMS": "RS256,HS256"})
    with pytest.raises(ValueError, match="OIDC_ISSUER"):
        verifier_from_config({"OIDC_ISSUER": "issuer", "OIDC_AUDIENCE": AUDIENCE})
