"""Security: TLS, SASL and the ACL authorizer (issue 18)."""
