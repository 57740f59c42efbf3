import { useState } from 'react';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { Badge, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { automationKeys, formatTime, type Automation, type AutomationVersion } from './api.ts';
import { useMemberName } from '../inbox/compose/members.ts';
import { DiffView } from './DiffView.tsx';
import { VersionEditor } from './VersionEditor.tsx';
import { VersionSelect } from './VersionSelect.tsx';
import { useVersion } from './versions.ts';
import styles from './automations.module.css';

/** The automation's versions, newest first; a diff between any two; the next version written from any of them. */
export function VersionsSection({ automation }: { automation: Automation }) {
  const writable = usePermissions().can('automations:write');
  const memberName = useMemberName();
  // A member wrote it from the dashboard, or a credential (an API key, an OAuth token) through the API.
  const writer = (id: string) => (id.startsWith('mem_') ? memberName(id) : `API credential ${id}`);
  const list = useCursorList<AutomationVersion>(automationKeys.versions(automation.id), `/v1/automations/${automation.id}/versions`);
  /** The version the editor starts from (its definition); null: the editor is closed. */
  const [editingFrom, setEditingFrom] = useState<number | null>(null);
  return (
    <>
      <Section
        title="Versions"
        actions={
          writable &&
          editingFrom === null && (
            <Button onClick={() => setEditingFrom(automation.latest_version)}>{automation.latest_version === 0 ? 'Write version 1' : 'New version'}</Button>
          )
        }
      >
        <PagedList list={list} empty="No version yet. Write version 1: the definition new runs will follow once it is deployed.">
          {(versions) => (
            <table className={tableClass}>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Message</th>
                  <th scope="col">Written</th>
                  <th scope="col">Warnings</th>
                  {writable && <th scope="col">Edit</th>}
                </tr>
              </thead>
              <tbody>
                {versions.map((version) => (
                  <tr key={version.id}>
                    <td>
                      Version {version.number} {version.number === automation.deployed_version && <Badge tone="good">deployed</Badge>}
                      {version.number === automation.previous_deployed_version && <Badge>previous</Badge>}
                    </td>
                    <td>{version.message ?? '—'}</td>
                    <td>
                      {formatTime(version.created_at)}
                      <div className={styles.muted}>by {writer(version.created_by)}</div>
                    </td>
                    <td>
                      {version.warnings.length === 0 ? (
                        'None'
                      ) : (
                        <ul className={styles.compactList}>
                          {version.warnings.map((warning) => (
                            <li key={warning}>{warning}</li>
                          ))}
                        </ul>
                      )}
                    </td>
                    {writable && (
                      <td>
                        <Button onClick={() => setEditingFrom(version.number)} aria-label={`New version from version ${version.number}`}>
                          Start from here
                        </Button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </PagedList>
      </Section>
      {editingFrom !== null && <VersionEditor automation={automation} from={editingFrom} onClose={() => setEditingFrom(null)} />}
      {automation.latest_version >= 2 && <CompareVersions automation={automation} />}
    </>
  );
}

/** Any two versions side by side, as a line diff of their pretty-printed definitions. */
function CompareVersions({ automation }: { automation: Automation }) {
  const [from, setFrom] = useState(automation.latest_version - 1);
  const [to, setTo] = useState(automation.latest_version);
  const before = useVersion(automation.id, from);
  const after = useVersion(automation.id, to);
  return (
    <Section title="Compare versions">
      <div className={styles.row}>
        <VersionSelect label="From" latest={automation.latest_version} value={from} onChange={setFrom} />
        <VersionSelect label="To" latest={automation.latest_version} value={to} onChange={setTo} />
      </div>
      {before.error || after.error ? (
        <ErrorMessage error={before.error ?? after.error} />
      ) : before.data && after.data ? (
        <DiffView before={before.data.definition} after={after.data.definition} label={`Changes from version ${from} to version ${to}`} />
      ) : (
        <Loading />
      )}
    </Section>
  );
}
