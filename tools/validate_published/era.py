"""The software a published row ran, from the source's date and what it names.

Never from the source_group name: a group name is a label chosen by whoever
filed the rows, and a 2021 source filed under a name that starts like a 2024
one must still get 2021 software. The rule:

1. Date (source_date): the earliest date the source text gives, in this
   order of trust: an explicit date field; full dates (2024-07-15) in the
   source fields; an arXiv id (2104.04473 -> April 2021); an NGC/NeMo
   container release (NeMo 24.07, pytorch-21.03 -> July 2024, March 2021);
   a month and year (Feb 2022); a venue year (SC'21); a bare year (2023).
   The source fields are searched first, the row's notes only when they give
   nothing. The earliest date counts: a measurement cannot postdate the
   first document that reports it.
2. Named software (tables.SOFTWARE_NAMES, first match in the source fields
   and notes): Megatron-Bridge, Megatron-Core, NeMo, DeepSpeed, llm-foundry,
   FSDP, Megatron, DDP. An entry with a `since` date does not apply to a
   source dated before it (the name existed, but not the behaviour the entry
   stands for); the next matching entry is tried.
3. Nothing named: a row with tensor or pipeline parallelism is Megatron-LM
   style (behaviour by date); otherwise no --framework (planner default).
4. Attention: CNN none; a source that names FlashAttention gets flash; a
   source dated before FlashAttention's publication gets unfused; a software
   stack whose kernels are fused by default (the entry's attention) gets
   flash; otherwise the flag is omitted (planner default: flash where the
   profile has a fused kernel). V100 / tf32 / fp32 rows get unfused
   (mapping.choose_framework_attention).

Dates are fractional years: 2021.25 = April 2021.
"""

import re
from dataclasses import dataclass, field

from . import tables

LATEST_YEAR = 2035  # larger four-digit numbers are sizes (seq 2048), not years
MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                      "nov", "dec"))}
VENUES = (r"sc|isca|mlsys|neurips|nips|icml|iclr|osdi|sosp|atc|ppopp|asplos|eurosys|nsdi|hpca|kdd|aaai|acl|"
          r"emnlp|ipdps|hpdc|ics|sigcomm|cluster|europar|euro-par|micro")


def month_year(year, month):
    """Fractional year of a month (1-12)."""
    return year + (month - 1) / 12.0


def source_texts(row):
    """(source texts, notes text): every string of the row's source object
    (title, location, commit dates, ...) and the notes."""
    src = row.get("source") if isinstance(row, dict) else None
    parts = []
    if isinstance(src, dict):
        parts = [v for v in src.values() if isinstance(v, str)]
    elif isinstance(src, str):
        parts = [src]
    notes = row.get("notes") if isinstance(row, dict) and isinstance(row.get("notes"), str) else ""
    return " ; ".join(parts), notes


def _explicit_date(row):
    for holder in (row, row.get("source") if isinstance(row.get("source"), dict) else {}):
        for key in ("date", "published", "year"):
            v = holder.get(key)
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, (int, float)) and 1990 <= v <= 2100:
                return float(v), f"{key} {v}"
            if isinstance(v, str):
                m = re.match(r"\s*((?:19|20)\d\d)(?:-(\d\d))?", v)
                if m:
                    month = int(m.group(2)) if m.group(2) and 1 <= int(m.group(2)) <= 12 else 1
                    return month_year(int(m.group(1)), month), f"{key} {v.strip()}"
    return None


def dates_in(text):
    """[(fractional year, evidence, rank)] found in text; lower rank = more
    trusted kind of evidence (full date 0, arXiv 1, container 2, month-year 3,
    venue 4, bare year 5)."""
    out = []
    t = text
    for m in re.finditer(r"\b((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b", t):
        out.append((month_year(int(m.group(1)), int(m.group(2))), m.group(0), 0))
    for m in re.finditer(r"arxiv[:\s/]*(?:abs/)?(\d\d)(0[1-9]|1[0-2])\.\d{4,5}", t, re.I):
        out.append((month_year(2000 + int(m.group(1)), int(m.group(2))), f"arXiv {m.group(1)}{m.group(2)}", 1))
    for m in re.finditer(r"\b(?:nemo|pytorch|tensorflow|mxnet|ngc|container)[\s:_-]{0,3}(?:container[\s:_-]{0,3})?"
                         r"(1[7-9]|2\d)\.(0[1-9]|1[0-2])\b", t, re.I):
        out.append((month_year(2000 + int(m.group(1)), int(m.group(2))), m.group(0), 2))
    for m in re.finditer(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+((?:19|20)\d\d)\b", t, re.I):
        out.append((month_year(int(m.group(2)), MONTHS[m.group(1).lower()] + 1), m.group(0), 3))
    for m in re.finditer(r"\b(" + VENUES + r")\s?'(\d\d)\b", t, re.I):
        out.append((2000.0 + int(m.group(2)), m.group(0), 4))
    for m in re.finditer(r"(?<![\w.\-])((?:19|20)\d\d)(?![\w.\-])", t):
        y = int(m.group(1))
        if 1990 <= y <= LATEST_YEAR:
            out.append((float(y), m.group(0), 5))
    return out


def source_date(row):
    """(fractional year, evidence text) or (None, None)."""
    if not isinstance(row, dict):
        return None, None
    explicit = _explicit_date(row)
    if explicit:
        return explicit
    src, notes = source_texts(row)
    for text, where in ((src, "source"), (notes, "notes")):
        found = dates_in(text)
        if found:
            best_rank = min(r for _, _, r in found)
            year, ev, _ = min((x for x in found if x[2] == best_rank), key=lambda x: x[0])
            return year, f"{where}: '{ev}'"
    return None, None


def fmt_date(year):
    y = int(year)
    m = int(round((year - y) * 12)) + 1
    return f"{y}-{min(m, 12):02d}"


@dataclass
class Software:
    framework: str = None        # --framework value or None (planner default)
    attention: str = None        # --attention value or None
    stack: str = None            # tables.SOFTWARE_NAMES stack (nemo, megatron-core, ...) or None
    date: float = None
    notes: list = field(default_factory=list)


def named_software(words, date):
    """First tables.SOFTWARE_NAMES entry whose pattern occurs in words and
    whose `since` date the source's date does not precede; None."""
    for entry in tables.SOFTWARE_NAMES:
        pattern, _stack, _fw, _attn, since, _why = entry
        if not re.search(pattern, words):
            continue
        if since is not None and date is not None and date < since[0]:
            continue
        return entry
    return None


def megatron_by_date(date):
    """megatron-legacy before Megatron-LM overlapped the data-parallel
    reduction with backward, megatron after; (framework, note)."""
    since, _why = tables.MEGATRON_OVERLAP_FROM
    if date is None:
        return "megatron", "date unknown: megatron (planner default)"
    if date < since:
        return "megatron-legacy", (f"dated before {fmt_date(since)}, when Megatron-LM began overlapping the "
                                   "data-parallel reduction (commit 2d5220a): megatron-legacy")
    return "megatron", f"dated {fmt_date(since)} or later (overlapped data-parallel reduction): megatron"


def mentions_flash(words):
    if not re.search(r"flash[- ]?attn|flash[- ]?attention|\bflash\b", words):
        return False
    return not re.search(r"\b(?:no|not|without|w/o)\s+(?:\w+\s+){0,2}flash", words)


def software(row, is_cnn=False, tp=1, pp=1):
    """The Software a row ran (framework, attention, stack, date, notes)."""
    sw = Software()
    sw.date, evidence = source_date(row)
    sw.notes.append(f"source dated {fmt_date(sw.date)} ({evidence})" if sw.date is not None
                    else "source date unknown (no date, arXiv id, release or year in the source or notes)")
    src, notes = source_texts(row)
    words = (src + " ; " + notes).lower()
    entry = named_software(words, sw.date)
    default_attn = None
    if entry:
        pattern, sw.stack, fw, default_attn, since, why = entry
        if fw == "megatron-by-date":
            fw, note = megatron_by_date(sw.date)
            sw.notes.append(f"framework {fw}: the source names Megatron, {note}")
        else:
            sw.notes.append(f"framework {fw}: {why}")
        sw.framework = fw
    elif tp > 1 or pp > 1:
        fw, note = megatron_by_date(sw.date)
        sw.framework = None if sw.date is None else fw
        sw.notes.append(f"no framework named; tensor/pipeline parallelism read as Megatron-LM style, {note}"
                        if sw.date is not None else "no framework named and date unknown: --framework omitted")
    else:
        sw.notes.append("no framework named: --framework omitted")
    if is_cnn:
        return sw
    flash_from, flash_why = tables.FLASH_ATTENTION_FROM
    if mentions_flash(words):
        sw.attention = "flash"
        sw.notes.append("attention flash: the source names FlashAttention")
    elif sw.date is not None and sw.date < flash_from:
        sw.attention = "unfused"
        sw.notes.append(f"attention unfused: dated before {flash_why}")
    elif default_attn:
        sw.attention = default_attn
        sw.notes.append(f"attention {default_attn}: {why}")
    else:
        sw.notes.append("attention kernel not named: --attention omitted (planner default)")
    return sw
