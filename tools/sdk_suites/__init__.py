"""The official SDKs' own test suites, plain and with the guard (``make sdk-suites``)."""
