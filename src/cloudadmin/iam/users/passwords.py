"""Password strength rules for new users (operations 2 and 3)."""

from __future__ import annotations

MIN_LENGTH = 8
MAX_LENGTH = 128

# A short list of the most used passwords of at least MIN_LENGTH characters (shorter ones
# fail the length rule anyway). Compared in lower case.
COMMON_PASSWORDS: frozenset[str] = frozenset(
    {
        "12345678",
        "123456789",
        "1234567890",
        "12345678910",
        "11111111",
        "00000000",
        "87654321",
        "88888888",
        "987654321",
        "123123123",
        "1q2w3e4r",
        "1q2w3e4r5t",
        "1qaz2wsx",
        "password",
        "password1",
        "password12",
        "password123",
        "passw0rd",
        "p@ssw0rd",
        "p@ssword",
        "qwertyuiop",
        "qwerty123",
        "qwerty12",
        "qwertyui",
        "asdfghjkl",
        "asdfasdf",
        "zxcvbnm1",
        "iloveyou",
        "iloveyou1",
        "sunshine",
        "princess",
        "football",
        "baseball",
        "welcome1",
        "welcome123",
        "superman",
        "starwars",
        "trustno1",
        "whatever",
        "computer",
        "internet",
        "michelle",
        "jennifer",
        "corvette",
        "mercedes",
        "changeme",
        "letmein1",
        "abcd1234",
        "abc12345",
        "admin123",
        "administrator",
        "aa123456",
        "q1w2e3r4",
        "q1w2e3r4t5",
        "zaq12wsx",
        "1234qwer",
        "qazwsxedc",
        "secret123",
        "dragon123",
        "monkey123",
    }
)


def password_problems(password: str, *, email: str | None = None) -> list[str]:
    """Messages naming what is wrong with a new password; empty when it is acceptable."""
    problems: list[str] = []
    if len(password) < MIN_LENGTH:
        problems.append(
            f"This password is too short. It must contain at least {MIN_LENGTH} characters."
        )
    if len(password) > MAX_LENGTH:
        problems.append(f"Ensure this field has no more than {MAX_LENGTH} characters.")
    lowered = password.lower()
    if lowered in COMMON_PASSWORDS:
        problems.append("This password is too common.")
    if password.isdigit():
        problems.append("This password is entirely numeric.")
    if email:
        local = email.split("@", 1)[0].lower()
        if lowered == email.lower() or (len(local) >= 4 and local in lowered):
            problems.append("The password is too similar to the email.")
    return problems
