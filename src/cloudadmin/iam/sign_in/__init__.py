"""Signing in with e-mail and password, for the consoles (the Admin Portal now, the
Customer Portal later): the credentials' check, the sessions kept in the database, and
the failed-sign-in notice. The consoles call these; they write no SQL of their own."""
