"""The cron vocabulary, defined once: field names and ranges, month and day names, nicknames.

The validator (cron/expression.py), the field expander (cron/fields.py) and the
describer (cron/describe.py) all read it from here.
"""

from __future__ import annotations

# Field names as error messages spell them, in the order an expression is written.
FIELD_NAMES_5 = ("minute", "hour", "day-of-month", "month", "day-of-week")
FIELD_NAMES_6 = ("second", *FIELD_NAMES_5)

# croniter's field order (seconds last), and each field's range and size.
MINUTE, HOUR, DOM, MONTH, DOW, SECOND = range(6)
RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6), (0, 59))
LEN_MEANS_ALL = (60, 24, 31, 12, 7, 60)

MONTH_ABBREVIATIONS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_ABBREVIATIONS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # 0 = Sunday
MONTH_NAMES = {m: i + 1 for i, m in enumerate(MONTH_ABBREVIATIONS)}
DOW_NAMES = {d: i for i, d in enumerate(DAY_ABBREVIATIONS)}
# A weekday name closing a range: croner reads "-sun" as "-7", so SAT-SUN is 6-7.
DOW_RANGE_END_NAMES = {**DOW_NAMES, DAY_ABBREVIATIONS[0]: 7}
# The names each field accepts, keyed by its written name (for validation) ...
NAMES_BY_FIELD = {"month": MONTH_NAMES, "day-of-week": DOW_NAMES}
# ... and by croniter's field index (for expansion).
NAMES: tuple[dict[str, int], ...] = ({}, {}, {}, MONTH_NAMES, DOW_NAMES, {})

# Each nickname: the expression it stands for, and how it reads.
NICKNAMES = {
    "@yearly": ("0 0 1 1 *", "yearly on Jan 1 at 00:00"),
    "@annually": ("0 0 1 1 *", "yearly on Jan 1 at 00:00"),
    "@monthly": ("0 0 1 * *", "monthly on day 1 at 00:00"),
    "@weekly": ("0 0 * * 0", "Sundays at 00:00"),
    "@daily": ("0 0 * * *", "daily at 00:00"),
    "@hourly": ("0 * * * *", "hourly at :00"),
}
