import * as chrono from 'chrono-node';

/** What the query says of time: a window, or an order among the matches. */
export interface TimeConstraint {
  from?: number;
  to?: number;
  /** "the first time" / "the last time": the earliest or latest of the matches. */
  order?: 'earliest' | 'latest';
}

const ANCHOR = /\b(before|after|since|until)\s+(.+?)(?:[?.!,;]|$)/i;

/**
 * The time a query names, against `now`: dates and relative expressions ("yesterday", "last
 * May", "on 8 May 2023", "three days ago") through chrono; "before/after <something>" anchored
 * on when the best match for that something happened (`anchor`); "the first/last time".
 */
export function timeConstraint(query: string, now: number, anchor: (phrase: string) => number | undefined): TimeConstraint | undefined {
  const out: TimeConstraint = {};
  const words = query.toLowerCase();
  if (/\b(first|earliest)\b/.test(words)) out.order = 'earliest';
  else if (/\b(last|latest|most recent)\s+time\b/.test(words)) out.order = 'latest';
  const parsed = mayNameTime(query) ? chrono.parse(lastMonthAsDate(query, now), new Date(now), { forwardDate: false })[0] : undefined;
  if (parsed) {
    const start = startOf(parsed.start);
    // A date without a time of day is the whole day; a month, the whole month; a year, the year.
    const end = parsed.end?.date().getTime() ?? endOf(parsed.start, start);
    const before = /\b(before|until|by)\s*$/i.test(query.slice(0, parsed.index));
    const after = /\b(after|since)\s*$/i.test(query.slice(0, parsed.index));
    if (before) out.to = start;
    else if (after) out.from = end;
    else Object.assign(out, { from: start, to: end });
  } else {
    const m = ANCHOR.exec(query);
    const at = m ? anchor(m[2]!) : undefined;
    if (m && at !== undefined) {
      if (/before|until/i.test(m[1]!)) out.to = at;
      else out.from = at;
    }
  }
  return out.from !== undefined || out.to !== undefined || out.order ? out : undefined;
}

/**
 * Every word chrono's English parsers need at least one of (a digit aside): weekdays, months,
 * the casual days and times, and the time units, with their abbreviations. A text with none of
 * them names no time chrono can read, so it is not parsed: chrono's first parses in a process
 * compile its patterns (about 150 ms of CPU), and each parse costs milliseconds.
 */
const TIME_WORDS = new Set(
  (
    'sunday sun monday mon tuesday tue tues wednesday wed thursday thurs thur thu friday fri saturday sat ' +
    'january jan february feb march mar april apr may june jun july jul august aug september sep sept october oct november nov december dec ' +
    'now today tonight tomorrow overmorrow tmr tmrw yesterday morning afternoon evening night midnight midday noon weekend weekends weekday weekdays ' +
    'sec second seconds min mins minute minutes hr hrs hour hours day days week weeks mo mos month months qtr quarter quarters yr year years ago'
  ).split(' '),
);

/** Whether chrono could find a time in `text`; false only when it cannot (a test holds it to chrono over a corpus). */
export function mayNameTime(text: string): boolean {
  if (/\d/.test(text)) return true;
  const lower = text.toLowerCase();
  // The one-letter units ("next w", "a few h") and "o'clock" after a number word.
  if (/\b(?:this|last|past|next|after|an?|the|few|several|half)\s*[smhdwy]\b|o'?clock/.test(lower)) return true;
  for (const word of lower.match(/\p{L}+/gu) ?? []) if (TIME_WORDS.has(word)) return true;
  return false;
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** "last May" as the May before `now` ("May 2023"), which chrono does not read. */
function lastMonthAsDate(query: string, now: number): string {
  return query.replace(new RegExp(`\\blast\\s+(${MONTHS.join('|')})\\b`, 'i'), (_, month: string) => {
    const m = MONTHS.indexOf(month.toLowerCase());
    const today = new Date(now);
    return `${month} ${today.getMonth() > m ? today.getFullYear() : today.getFullYear() - 1}`;
  });
}

/** When what a date names begins: a day without a time of day begins at midnight, a month on its first. */
function startOf(start: chrono.ParsedComponents): number {
  const d = start.date();
  if (start.isCertain('hour')) return d.getTime();
  if (start.isCertain('day') || !start.isCertain('month')) return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  return new Date(d.getFullYear(), d.getMonth(), 1).getTime();
}

function endOf(start: chrono.ParsedComponents, at: number): number {
  if (start.isCertain('hour')) return at + 3_600_000;
  if (start.isCertain('day')) return at + 86_400_000;
  if (start.isCertain('month')) {
    const d = new Date(at);
    return new Date(d.getFullYear(), d.getMonth() + 1, 1).getTime();
  }
  if (start.isCertain('year')) return new Date(new Date(at).getFullYear() + 1, 0, 1).getTime();
  return at + 86_400_000;
}
