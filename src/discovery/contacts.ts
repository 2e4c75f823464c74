import { ConfigError } from '../errors.ts';

/**
 * Access-request contacts (spec 2.12) from `--contact "First Last <email>"` values, checked before
 * anything is sent: a request with a contact the school cannot reach only slows the approval.
 *
 * Names: "First Last <email>" takes the first word as first_name and the rest as last_name
 * ("Mary van der Berg" → Mary / van der Berg); write "Last, First <email>" when the first name
 * has several words ("Smith, Mary Ann <...>").
 * Phones and notes pair with contacts by position: the n-th --phone / --notes belongs to the
 * n-th --contact; pass "" to leave one out. More phones or notes than contacts is an error.
 */
export interface AccessContact {
  first_name: string;
  last_name: string;
  email_address: string;
  phone_number?: string;
  notes?: string;
}

// pragmatic address check: one @, a local part without spaces, a dotted domain of valid labels
const EMAIL_RE = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
const PHONE_RE = /^\+?[0-9 ()\-.]{5,30}$/;

const CONTROL = /[\u0000-\u001f\u007f]/;

export function isValidEmail(s: string): boolean {
  return EMAIL_RE.test(s) && !s.split('@')[0]!.startsWith('.') && !s.includes('..');
}

export function parseContact(spec: string): AccessContact {
  const bad = (why: string) =>
    new ConfigError(`--contact ${JSON.stringify(spec)}: ${why}; expected "First Last <email@example.org>"`, 'E_USAGE');
  const m = /^\s*(.*?)\s*<([^<>]*)>\s*$/.exec(spec);
  if (!m) throw bad('no <email> at the end');
  const [, namePart, emailRaw] = m;
  const email = emailRaw!.trim();
  if (!isValidEmail(email)) throw bad(`${JSON.stringify(email)} is not a valid email address`);
  if (CONTROL.test(namePart!)) throw bad('control characters in the name');
  let first: string;
  let last: string;
  if (namePart!.includes(',')) {
    const [l, ...f] = namePart!.split(',');
    last = l!.trim();
    first = f.join(',').trim();
  } else {
    const words = namePart!.split(/\s+/).filter(Boolean);
    first = words[0] ?? '';
    last = words.slice(1).join(' ');
  }
  if (!first) throw bad('first name missing');
  if (!last) throw bad('last name missing');
  if (first.length > 100 || last.length > 100) throw bad('names are limited to 100 characters');
  return { first_name: first, last_name: last, email_address: email };
}

export function buildContacts(contacts: string[], phones: string[] = [], notes: string[] = []): AccessContact[] {
  if (phones.length > contacts.length)
    throw new ConfigError(
      `${phones.length} --phone values for ${contacts.length} --contact: each --phone belongs to the --contact in the same position`,
      'E_USAGE',
    );
  if (notes.length > contacts.length)
    throw new ConfigError(
      `${notes.length} --notes values for ${contacts.length} --contact: each --notes belongs to the --contact in the same position`,
      'E_USAGE',
    );
  return contacts.map((spec, i) => {
    const c = parseContact(spec);
    const phone = phones[i]?.trim();
    if (phone) {
      if (!PHONE_RE.test(phone) || !/\d{5}/.test(phone.replace(/\D/g, ''))) {
        throw new ConfigError(
          `--phone ${JSON.stringify(phone)} (for ${c.email_address}): expected digits, spaces, + - ( ) . only`,
          'E_USAGE',
        );
      }
      c.phone_number = phone;
    }
    const note = notes[i]?.trim();
    if (note) {
      if (note.length > 1000) throw new ConfigError(`--notes for ${c.email_address}: at most 1000 characters`, 'E_USAGE');
      c.notes = note;
    }
    return c;
  });
}
