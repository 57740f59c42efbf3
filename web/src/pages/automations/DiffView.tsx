import { diffLines } from 'diff';
import { useMemo } from 'react';
import { prettyJson } from './JsonField.tsx';
import styles from './automations.module.css';

interface Line {
  kind: 'added' | 'removed' | 'same';
  text: string;
}

/** Unchanged lines kept around each change; longer unchanged stretches fold into one line that says how many. */
const CONTEXT = 3;

type Row = Line | { kind: 'folded'; count: number };

function fold(lines: Line[]): Row[] {
  const near = lines.map(() => false);
  lines.forEach((line, index) => {
    if (line.kind === 'same') return;
    for (let other = Math.max(0, index - CONTEXT); other <= Math.min(lines.length - 1, index + CONTEXT); other++) near[other] = true;
  });
  const rows: Row[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.kind !== 'same' || near[index]) rows.push(line);
    else {
      const last = rows.at(-1);
      if (last?.kind === 'folded') last.count++;
      else rows.push({ kind: 'folded', count: 1 });
    }
  }
  return rows;
}

function linesOf(before: unknown, after: unknown): Line[] {
  const lines: Line[] = [];
  for (const change of diffLines(prettyJson(before), prettyJson(after))) {
    const kind = change.added ? 'added' : change.removed ? 'removed' : 'same';
    for (const text of change.value.replace(/\n$/, '').split('\n')) lines.push({ kind, text });
  }
  return lines;
}

const MARKERS = { added: '+', removed: '−', same: ' ' } as const;
/** Read out before each changed line: the colour and the marker alone are not enough for everyone. */
const SPOKEN = { added: 'added: ', removed: 'removed: ', same: '' } as const;

/**
 * Two JSON documents compared line by line, pretty-printed the same way (so a key moved in the
 * source is not a change): each line marked `+` (added), `−` (removed) or blank, in `ins`/`del`
 * elements, with a count of each above; unchanged stretches away from any change are folded.
 */
export function DiffView({ before, after, label }: { before: unknown; after: unknown; label: string }) {
  const lines = useMemo(() => linesOf(before, after), [before, after]);
  const rows = useMemo(() => fold(lines), [lines]);
  const added = lines.filter((line) => line.kind === 'added').length;
  const removed = lines.filter((line) => line.kind === 'removed').length;
  return (
    <figure className={styles.diff} aria-label={label}>
      <figcaption data-testid="diff-summary">
        {added === 0 && removed === 0 ? 'No differences.' : `${added} line${added === 1 ? '' : 's'} added, ${removed} removed.`}
      </figcaption>
      <pre className={styles.diffLines}>
        {rows.map((line, index) => {
          if (line.kind === 'folded')
            return (
              <span key={index} className={styles.folded}>
                {`⋯ ${line.count} unchanged line${line.count === 1 ? '' : 's'}\n`}
              </span>
            );
          const content = (
            <>
              <span className={styles.marker} aria-hidden="true">
                {MARKERS[line.kind]}
              </span>
              <span className="visually-hidden">{SPOKEN[line.kind]}</span>
              {line.text}
              {'\n'}
            </>
          );
          if (line.kind === 'added')
            return (
              <ins key={index} className={styles.added}>
                {content}
              </ins>
            );
          if (line.kind === 'removed')
            return (
              <del key={index} className={styles.removed}>
                {content}
              </del>
            );
          return <span key={index}>{content}</span>;
        })}
      </pre>
    </figure>
  );
}
