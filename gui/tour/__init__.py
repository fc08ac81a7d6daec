"""The guided tour panel."""
