/** GitHub's anchor of a markdown heading: lower case, punctuation (§ too) dropped, spaces to '-'. */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of every heading of a markdown text. */
export function headingAnchors(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1])));
}
