"""The conformance helper itself: it finds what breaks the provider's schemas."""

from __future__ import annotations

import pytest

from tests.provider.conformance import (
    assert_matches_provider,
    in_provider,
    provider_errors,
)

SELLER = {
    "id": 1,
    "email": "a@b.example",
    "full_name": "A",
    "reseller_name": "R",
    "company": "R",
    "date_joined": "2025-01-01T00:00:00Z",
    "activated": False,
    "deleted": False,
}
SELLER_PATH = "/iam/admin/sellers/{sellerId}"


class TestFindsBreaks:
    def test_a_conforming_body_passes(self):
        assert_matches_provider("GET", SELLER_PATH, 200, SELLER)

    def test_null_where_the_provider_types_a_string(self):
        errors = provider_errors("GET", SELLER_PATH, 200, {**SELLER, "phone": None})
        assert errors == ["at $.phone: None is not of type 'string'"]

    def test_a_missing_required_field(self):
        body = {k: v for k, v in SELLER.items() if k != "company"}
        assert provider_errors("GET", SELLER_PATH, 200, body) == [
            "at $: 'company' is a required property"
        ]

    def test_nullable_true_admits_null(self):
        # ClientSeller is `{type: integer, nullable: true}` (3.0 style in a 3.1 document).
        errors = provider_errors("PATCH", "/iam/clients/{id}", 200, {"seller": None})
        assert not [e for e in errors if "seller" in e]
        errors = provider_errors("PATCH", "/iam/clients/{id}", 200, {"seller": "x"})
        assert "at $.seller: 'x' is not of type 'integer', 'null'" in errors

    def test_a_body_where_the_provider_has_none(self):
        errors = provider_errors("POST", "/cloud/v1/user_actions/unsubscribe_amqp", 204, {})
        assert errors and "no body" in errors[0]
        assert provider_errors("POST", "/cloud/v1/user_actions/unsubscribe_amqp", 204, None) == []

    def test_a_status_the_provider_does_not_document(self):
        with pytest.raises(AssertionError, match="documents no 201"):
            provider_errors("GET", SELLER_PATH, 201, SELLER)

    def test_tolerated_differences_are_named(self):
        assert_matches_provider(
            "GET", SELLER_PATH, 200, {**SELLER, "phone": None}, tolerated=["$.phone"]
        )


class TestOperations:
    def test_parameter_names_do_not_matter(self):
        assert in_provider("GET", "/iam/admin/sellers/{x}")
        assert not in_provider("GET", "/iam/admin/sellers/{x}/y")

    def test_unknown_operation(self):
        with pytest.raises(AssertionError, match="not an operation of the provider"):
            provider_errors("GET", "/healthz", 200, {})

    def test_known_but_not_extracted_says_to_rerun_the_script(self):
        with pytest.raises(AssertionError, match="re-run tests/provider/extract.py"):
            provider_errors("GET", "/iam/auth/jwt/clients/{clientId}/login", 200, {})
