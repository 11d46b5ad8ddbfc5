"""Players' identities: the bearer tokens of the operator's OpenID Connect identity
provider, verified against the keys it publishes.

A token is a signed JSON Web Token (PyJWT, with ``cryptography`` for the signatures).
:meth:`OidcVerifier.verify` takes the token as it follows ``Bearer `` in the
``Authorization`` header and answers the identity it proves, ``(iss, sub)``, or raises
:class:`InvalidIdentity`.  A token proves an identity when:

- it is at most ``max_token_bytes`` long (checked before anything is parsed);
- its header names an algorithm of the verifier's own list (``OIDC_ALGORITHMS``): the
  token never chooses it, and ``none`` and the shared-secret ``HS*`` algorithms are never
  on the list, so that neither an unsigned token nor one "signed" with a public key as an
  HMAC secret passes;
- its header names a key (``kid``) that the identity provider publishes in its JSON Web
  Key Set, the key signs with that algorithm, and the signature is that key's;
- it has ``exp``, ``iss``, ``sub`` and ``aud``; ``iss`` is the configured issuer, ``aud``
  names the configured audience, and ``exp``, ``nbf`` and ``iat`` hold with
  ``leeway`` seconds for the clocks' difference.

The key set comes from ``OIDC_JWKS_URL``, or else from the ``jwks_uri`` of the issuer's
``/.well-known/openid-configuration``, read once (when the first token arrives, so that
the service starts while the identity provider is down) and kept.  PyJWT's
``PyJWKClient`` keeps the key set ``jwks_cache_seconds``; a token whose key is not in it
fetches the set again (the provider has rotated its keys), at most once every
``refetch_seconds``, so that tokens with made-up key ids cannot make the service hammer
the provider.  After a failed fetch the next one also waits ``refetch_seconds``: in the
meantime tokens are answered at once, as unavailable.  Each fetch's connection and reads
time out after ``timeout`` seconds and follow no redirects.  A verifier is thread-safe:
the fetches happen one at a time, under a lock; verifying a token once the keys are
there takes no lock but the key set's own.

The refusals' codes (:attr:`InvalidIdentity.code`), stable, and the HTTP status that
fits each:

- ``token_too_large``: longer than ``max_token_bytes``; 401;
- ``token_invalid``: not a signed JSON Web Token, a key the provider does not publish,
  a bad signature, a missing or empty ``sub`` or ``exp``; 401;
- ``token_algorithm``: an algorithm not on the list (``none``, ``HS256``...), or one
  the named key does not sign with; 401;
- ``token_expired``: ``exp`` has passed; 401;
- ``token_not_yet_valid``: ``nbf`` or ``iat`` is still to come; 401;
- ``token_audience``: ``aud`` missing or not naming the audience; 401;
- ``token_issuer``: ``iss`` missing or not the issuer; 401;
- ``identity_provider_unavailable`` (:data:`PROVIDER_UNAVAILABLE`): the key set (or
  the discovery document) could not be fetched, or was no usable one: the token may be
  good, the service cannot tell now; 503.

No message holds the token, nor any text taken from it.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.error import URLError
from urllib.parse import urlparse

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet
from jwt.algorithms import get_default_algorithms
from jwt.exceptions import (
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidSignatureError,
    MissingRequiredClaimError,
    PyJWKClientConnectionError,
    PyJWKClientError,
    PyJWKSetError,
    PyJWTError,
)

from service import config as settings

TOKEN_TOO_LARGE = "token_too_large"
TOKEN_INVALID = "token_invalid"
TOKEN_ALGORITHM = "token_algorithm"
TOKEN_EXPIRED = "token_expired"
TOKEN_NOT_YET_VALID = "token_not_yet_valid"
TOKEN_AUDIENCE = "token_audience"
TOKEN_ISSUER = "token_issuer"
#: The one refusal that is not the token's fault: the API answers it with 503.
PROVIDER_UNAVAILABLE = "identity_provider_unavailable"

#: The claims every token must have.
REQUIRED_CLAIMS = ("exp", "iss", "sub", "aud")
DISCOVERY_PATH = "/.well-known/openid-configuration"
#: A discovery document longer than this is no discovery document.
_DISCOVERY_MAX_BYTES = 1024 * 1024


class InvalidIdentity(Exception):
    """A token that proves no identity: ``code`` says why, stable (see the module's
    docstring), ``detail`` in a sentence; neither holds the token.  ``retry_after``:
    for :data:`PROVIDER_UNAVAILABLE`, the seconds before the provider is asked again
    (``refetch_seconds`` after a failed fetch, rounded up)."""

    def __init__(self, code: str, detail: str, retry_after: int | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


def _refused(algorithm: str) -> bool:
    """Whether ``algorithm`` may never verify a token: none, or a shared secret."""
    return algorithm.lower() == "none" or algorithm.upper().startswith("HS")


class _KeySet(PyJWKClient):
    """PyJWT's key set client, with two guards: whatever the provider answers that is no
    key set with a signing key counts as a failed fetch (``PyJWKClientConnectionError``),
    and a failed fetch is not tried again for ``cooldown_duration`` seconds."""

    def __init__(self, uri: str, *, lifespan: float, cooldown: float, timeout: float):
        super().__init__(uri, cache_jwk_set=True, lifespan=lifespan, timeout=timeout,
                         cooldown_duration=cooldown,
                         headers={"User-Agent": "patience-server"})
        self._failed_at: float | None = None

    def fetch_data(self) -> Any:
        with self._client_lock:
            if (self._failed_at is not None
                    and time.monotonic() - self._failed_at < self.cooldown_duration):
                raise PyJWKClientConnectionError("the key set could not be fetched just now")
            try:
                data = super().fetch_data()
                self._get_signing_keys_from_jwk_set(PyJWKSet.from_dict(data))
            except PyJWKClientConnectionError:
                self._failed_at = time.monotonic()
                raise
            except (PyJWTError, ValueError, OSError, http.client.HTTPException) as error:
                self._failed_at = time.monotonic()
                if self.jwk_set_cache is not None:
                    self.jwk_set_cache.put(None)
                raise PyJWKClientConnectionError(
                    f"{self.uri} served no usable key set ({type(error).__name__})") from error
            self._failed_at = None
            return data


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _fetch_json(url: str, timeout: float) -> Any:
    """The JSON document at ``url`` (``OSError``, ``ValueError`` or
    ``http.client.HTTPException`` when there is none)."""
    opener = urllib.request.build_opener(_NoRedirects())
    request = urllib.request.Request(url, headers={"User-Agent": "patience-server",
                                                   "Accept": "application/json"})
    with opener.open(request, timeout=timeout) as response:
        body = response.read(_DISCOVERY_MAX_BYTES + 1)
    if len(body) > _DISCOVERY_MAX_BYTES:
        raise ValueError(f"{url} is longer than {_DISCOVERY_MAX_BYTES} bytes")
    return json.loads(body)


def _http_url(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


class OidcVerifier:
    """Verifies the bearer tokens of one identity provider (``issuer``) for one
    audience: :meth:`verify`.  ``ValueError`` when a setting is unusable."""

    def __init__(self, issuer: str, audience: str, *, jwks_url: str | None = None,
                 algorithms: tuple[str, ...] = ("RS256", "ES256"), leeway: float = 30,
                 jwks_cache_seconds: float = 300, refetch_seconds: float = 10,
                 timeout: float = 2, max_token_bytes: int = 8 * 1024) -> None:
        if not _http_url(issuer):
            raise ValueError(f"OIDC_ISSUER must be an http(s) URL, not {issuer!r}")
        if not audience:
            raise ValueError("OIDC_AUDIENCE must be set with OIDC_ISSUER")
        if jwks_url is not None and not _http_url(jwks_url):
            raise ValueError(f"OIDC_JWKS_URL must be an http(s) URL, not {jwks_url!r}")
        if not algorithms:
            raise ValueError("OIDC_ALGORITHMS must name at least one algorithm")
        known = get_default_algorithms()
        for algorithm in algorithms:
            if _refused(algorithm):
                raise ValueError(f"OIDC_ALGORITHMS: {algorithm!r} is never accepted "
                                 "(only public-key signatures)")
            if algorithm not in known:
                raise ValueError(f"OIDC_ALGORITHMS: {algorithm!r} is no algorithm of PyJWT")
        for name, value in (("OIDC_LEEWAY_SECONDS", leeway),
                            ("OIDC_JWKS_REFETCH_SECONDS", refetch_seconds)):
            if value < 0:
                raise ValueError(f"{name} must be 0 or more, not {value}")
        for name, value in (("OIDC_JWKS_CACHE_SECONDS", jwks_cache_seconds),
                            ("OIDC_FETCH_TIMEOUT_SECONDS", timeout),
                            ("OIDC_MAX_TOKEN_BYTES", max_token_bytes)):
            if value <= 0:
                raise ValueError(f"{name} must be more than 0, not {value}")
        self.issuer = issuer
        self.audience = audience
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_cache_seconds = jwks_cache_seconds
        self.refetch_seconds = refetch_seconds
        self.timeout = timeout
        self.max_token_bytes = max_token_bytes
        self.discovery_url = issuer.rstrip("/") + DISCOVERY_PATH
        self._lock = threading.Lock()
        self._discovery_failed_at: float | None = None
        self._keys: _KeySet | None = None
        if jwks_url is not None:
            self._keys = self._key_set(jwks_url)

    def verify(self, token: str) -> tuple[str, str]:
        """The identity that ``token`` proves, ``(iss, sub)``; else :class:`InvalidIdentity`."""
        if not isinstance(token, str):
            raise InvalidIdentity(TOKEN_INVALID, "the token is not text")
        if len(token) > self.max_token_bytes:
            raise InvalidIdentity(TOKEN_TOO_LARGE,
                                  f"the token is longer than {self.max_token_bytes} bytes")
        if not token.isascii():
            raise InvalidIdentity(TOKEN_INVALID, "the token is not a JSON Web Token")
        try:
            header = jwt.get_unverified_header(token)
        except PyJWTError:
            raise InvalidIdentity(TOKEN_INVALID, "the token is not a JSON Web Token") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise InvalidIdentity(TOKEN_ALGORITHM,
                                  "the token is not signed with an accepted algorithm")
        key_id = header.get("kid")
        if not isinstance(key_id, str) or not key_id:
            raise InvalidIdentity(TOKEN_INVALID, "the token names no signing key")
        key = self._signing_key(key_id)
        claims = self._decode(token, key)
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise InvalidIdentity(TOKEN_INVALID, "the token's subject is empty")
        return claims["iss"], subject

    def _decode(self, token: str, key: PyJWK) -> dict[str, Any]:
        """The token's claims, its signature and claims verified."""
        try:
            return jwt.decode(token, key, algorithms=list(self.algorithms),
                              audience=self.audience, issuer=self.issuer,
                              leeway=self.leeway,
                              options={"require": list(REQUIRED_CLAIMS)})
        except ExpiredSignatureError:
            code, detail = TOKEN_EXPIRED, "the token has expired"
        except ImmatureSignatureError:
            code, detail = TOKEN_NOT_YET_VALID, "the token is not valid yet"
        except InvalidAudienceError:
            code, detail = TOKEN_AUDIENCE, "the token is not meant for this service"
        except InvalidIssuerError:
            code, detail = TOKEN_ISSUER, "the token comes from another issuer"
        except InvalidAlgorithmError:
            code, detail = TOKEN_ALGORITHM, "the token's key does not sign with its algorithm"
        except InvalidSignatureError:
            code, detail = TOKEN_INVALID, "the token's signature does not match"
        except MissingRequiredClaimError as missing:
            code = {"aud": TOKEN_AUDIENCE, "iss": TOKEN_ISSUER}.get(missing.claim,
                                                                    TOKEN_INVALID)
            detail = f"the token has no {missing.claim!r} claim"
        except PyJWTError:
            code, detail = TOKEN_INVALID, "the token's claims are malformed"
        raise InvalidIdentity(code, detail) from None

    def _signing_key(self, key_id: str) -> PyJWK:
        """The provider's key ``key_id`` (the key set fetched again, at most once every
        ``refetch_seconds``, when it does not have it)."""
        keys = self._keys or self._discover()
        try:
            return keys.get_signing_key(key_id)
        except (PyJWKClientConnectionError, PyJWKSetError) as error:
            raise InvalidIdentity(PROVIDER_UNAVAILABLE,
                                  "the identity provider's keys cannot be fetched",
                                  self._retry_after) from error
        except PyJWKClientError:
            raise InvalidIdentity(TOKEN_INVALID, "the token's signing key is not one of "
                                  "the identity provider's") from None

    def _discover(self) -> _KeySet:
        """The key set named by the issuer's discovery document, read once."""
        with self._lock:
            if self._keys is not None:
                return self._keys
            failed_at = self._discovery_failed_at
            if failed_at is not None and time.monotonic() - failed_at < self.refetch_seconds:
                raise InvalidIdentity(PROVIDER_UNAVAILABLE,
                                      "the identity provider's discovery document cannot "
                                      "be fetched", self._retry_after)
            try:
                document = _fetch_json(self.discovery_url, self.timeout)
                if not isinstance(document, dict):
                    raise ValueError(f"{self.discovery_url} is not a JSON object")
                if document.get("issuer") != self.issuer:
                    raise ValueError(f"{self.discovery_url} names another issuer")
                jwks_uri = document.get("jwks_uri")
                if not isinstance(jwks_uri, str) or not _http_url(jwks_uri):
                    raise ValueError(f"{self.discovery_url} names no http(s) jwks_uri")
            except (URLError, OSError, ValueError, http.client.HTTPException) as error:
                self._discovery_failed_at = time.monotonic()
                raise InvalidIdentity(PROVIDER_UNAVAILABLE,
                                      "the identity provider's discovery document cannot "
                                      "be fetched", self._retry_after) from error
            self._keys = self._key_set(jwks_uri)
            return self._keys

    @property
    def _retry_after(self) -> int:
        """A failed fetch is not tried again for ``refetch_seconds``: a client asked to
        come back sooner would only be refused again."""
        return max(1, math.ceil(self.refetch_seconds))

    def _key_set(self, uri: str) -> _KeySet:
        return _KeySet(uri, lifespan=self.jwks_cache_seconds,
                       cooldown=self.refetch_seconds, timeout=self.timeout)


def verifier_from_config(config: Mapping[str, Any]) -> OidcVerifier | None:
    """The app's verifier, from its settings (``OIDC_*``; a setting left out has the
    table's default); None when ``OIDC_ISSUER`` is unset.  ``ValueError`` names an
    unusable setting."""

    def setting(name: str) -> Any:
        return config.get(name, settings.SETTINGS[name].default)

    issuer = setting("OIDC_ISSUER")
    if not issuer:
        return None
    algorithms = tuple(name.strip() for name in str(setting("OIDC_ALGORITHMS")).split(",")
                       if name.strip())
    return OidcVerifier(
        issuer, setting("OIDC_AUDIENCE") or "", jwks_url=setting("OIDC_JWKS_URL"),
        algorithms=algorithms, leeway=setting("OIDC_LEEWAY_SECONDS"),
        jwks_cache_seconds=setting("OIDC_JWKS_CACHE_SECONDS"),
        refetch_seconds=setting("OIDC_JWKS_REFETCH_SECONDS"),
        timeout=setting("OIDC_FETCH_TIMEOUT_SECONDS"),
        max_token_bytes=setting("OIDC_MAX_TOKEN_BYTES"))
