/** Public or Private, as two labelled radio cards. */
import type { JSX } from 'preact';
import { GlobeIcon, LockIcon } from '../icons.js';

export type Visibility = 'Public' | 'Private';

export function VisibilityChoice(props: { value: Visibility; onChange: (v: Visibility) => void; name: string; legend: string }): JSX.Element {
  const option = (v: Visibility, title: string, text: string, Icon: typeof GlobeIcon) => (
    <label class={'choice' + (props.value === v ? ' checked' : '')}>
      <input type="radio" name={props.name} value={v} checked={props.value === v} onChange={() => props.onChange(v)} />
      <span class="choice-icon"><Icon size={18} /></span>
      <span class="choice-text">
        <span class="choice-title">{title}</span>
        <span class="choice-desc">{text}</span>
      </span>
    </label>
  );
  return (
    <fieldset class="choices">
      <legend class="field-label">{props.legend}</legend>
      {option('Public', 'Public', 'Anyone with a file’s delivery URL can download it.', GlobeIcon)}
      {option('Private', 'Private', 'Files are reachable only through signed links.', LockIcon)}
    </fieldset>
  );
}
