"""The guided tour's claims, each computed by the engine."""
