"""The portal's sections, one module each (docs/portal.md, "Sections")."""
