"""The security policy every UI response carries: one Content-Security-Policy (csp), whose
`script-src` alone differs between Datasette's pages (CSP) and the plugin's own (plugin.PAGE_CSP),
and the other security headers (SECURITY_HEADERS)."""


# Every response: no framing, no MIME sniffing, no referrer, no <object>/<embed>, nothing loaded
# from or sent anywhere but this server. Datasette's own pages carry inline scripts (hence 'unsafe-inline'
# there); the plugin's pages send a stricter policy of their own (plugin.PAGE_CSP), kept as sent.
def csp(script_src: str) -> str:
    """The one Content-Security-Policy of the UI, with `script-src` the only part that differs."""
    return ("default-src 'self'; script-src " + script_src + "; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


CSP = csp("'self' 'unsafe-inline'")
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
