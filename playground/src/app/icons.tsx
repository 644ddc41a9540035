/**
 * Inline SVG icons (stroke icons on a 24-unit grid). Decorative: hidden from assistive
 * technology; the control around an icon carries the name.
 */
import type { ComponentChildren, JSX } from 'preact';

interface IconProps {
  size?: number;
  class?: string;
}

function Svg(props: IconProps & { children: ComponentChildren; fill?: boolean }): JSX.Element {
  const size = props.size ?? 18;
  return (
    <svg
      class={'icon' + (props.class ? ' ' + props.class : '')}
      width={size} height={size} viewBox="0 0 24 24"
      fill="none" stroke="currentColor" stroke-width={1.8} stroke-linecap="round" stroke-linejoin="round"
      aria-hidden="true" focusable="false"
    >
      {props.children}
    </svg>
  );
}

const FILE = 'M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z';

export const FolderIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3 7.5A2.5 2.5 0 0 1 5.5 5h3.3a1.5 1.5 0 0 1 1.1.5L11.5 7h7A2.5 2.5 0 0 1 21 9.5v8a2.5 2.5 0 0 1-2.5 2.5h-13A2.5 2.5 0 0 1 3 17.5z" /></Svg>
);
export const ImageIcon = (p: IconProps) => (
  <Svg {...p}><rect x="3" y="3" width="18" height="18" rx="2.5" /><circle cx="9" cy="9" r="2" /><path d="m21 15-4.5-4.5L6 21" /></Svg>
);
export const VideoIcon = (p: IconProps) => (
  <Svg {...p}><rect x="2.5" y="6" width="13.5" height="12" rx="2.5" /><path d="m16 10.5 5.5-3.5v10l-5.5-3.5" /></Svg>
);
export const DocumentIcon = (p: IconProps) => (
  <Svg {...p}><path d={FILE} /><path d="M14 3v5h5" /><path d="M9 13h6M9 17h6M9 9h1.5" /></Svg>
);
export const AudioIcon = (p: IconProps) => (
  <Svg {...p}><path d="M9 18V5.5l11-2.5v13" /><circle cx="6" cy="18" r="3" /><circle cx="17" cy="16" r="3" /></Svg>
);
export const ArchiveIcon = (p: IconProps) => (
  <Svg {...p}><rect x="2.5" y="3.5" width="19" height="5" rx="1.2" /><path d="M4.5 8.5V19a2 2 0 0 0 2 2h11a2 2 0 0 0 2-2V8.5" /><path d="M10 12.5h4" /></Svg>
);
export const OtherIcon = (p: IconProps) => (
  <Svg {...p}><path d={FILE} /><path d="M14 3v5h5" /></Svg>
);
export const UploadIcon = (p: IconProps) => (
  <Svg {...p}><path d="M12 15V3.5M7 8.5l5-5 5 5" /><path d="M21 15v3.5a2.5 2.5 0 0 1-2.5 2.5h-13A2.5 2.5 0 0 1 3 18.5V15" /></Svg>
);
export const FolderPlusIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3 7.5A2.5 2.5 0 0 1 5.5 5h3.3a1.5 1.5 0 0 1 1.1.5L11.5 7h7A2.5 2.5 0 0 1 21 9.5v8a2.5 2.5 0 0 1-2.5 2.5h-13A2.5 2.5 0 0 1 3 17.5z" /><path d="M12 10.5v6M9 13.5h6" /></Svg>
);
export const GridIcon = (p: IconProps) => (
  <Svg {...p}><rect x="3.5" y="3.5" width="7" height="7" rx="1.5" /><rect x="13.5" y="3.5" width="7" height="7" rx="1.5" /><rect x="3.5" y="13.5" width="7" height="7" rx="1.5" /><rect x="13.5" y="13.5" width="7" height="7" rx="1.5" /></Svg>
);
export const ListIcon = (p: IconProps) => (
  <Svg {...p}><path d="M8.5 6h12M8.5 12h12M8.5 18h12M3.5 6h.01M3.5 12h.01M3.5 18h.01" /></Svg>
);
export const SearchIcon = (p: IconProps) => (
  <Svg {...p}><circle cx="11" cy="11" r="7" /><path d="m20.5 20.5-4.3-4.3" /></Svg>
);
export const LockIcon = (p: IconProps) => (
  <Svg {...p}><rect x="4.5" y="10.5" width="15" height="10.5" rx="2.5" /><path d="M8 10.5V7.5a4 4 0 0 1 8 0v3" /></Svg>
);
export const GlobeIcon = (p: IconProps) => (
  <Svg {...p}><circle cx="12" cy="12" r="9" /><path d="M3 12h18M12 3a14 14 0 0 1 0 18M12 3a14 14 0 0 0 0 18" /></Svg>
);
export const MoreIcon = (p: IconProps) => (
  <Svg {...p}><circle cx="12" cy="5.5" r="1.3" fill="currentColor" /><circle cx="12" cy="12" r="1.3" fill="currentColor" /><circle cx="12" cy="18.5" r="1.3" fill="currentColor" /></Svg>
);
export const LinkIcon = (p: IconProps) => (
  <Svg {...p}><path d="M10 13.5a4.5 4.5 0 0 0 6.4.4l3-3a4.5 4.5 0 0 0-6.4-6.4l-1.6 1.6" /><path d="M14 10.5a4.5 4.5 0 0 0-6.4-.4l-3 3a4.5 4.5 0 0 0 6.4 6.4l1.6-1.6" /></Svg>
);
export const CopyIcon = (p: IconProps) => (
  <Svg {...p}><rect x="9" y="9" width="12" height="12" rx="2.5" /><path d="M15 9V5.5A2.5 2.5 0 0 0 12.5 3h-7A2.5 2.5 0 0 0 3 5.5v7A2.5 2.5 0 0 0 5.5 15H9" /></Svg>
);
export const DownloadIcon = (p: IconProps) => (
  <Svg {...p}><path d="M12 3.5V15M7 10l5 5 5-5" /><path d="M21 15v3.5a2.5 2.5 0 0 1-2.5 2.5h-13A2.5 2.5 0 0 1 3 18.5V15" /></Svg>
);
export const TrashIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3.5 6h17M9 6V4.5A1.5 1.5 0 0 1 10.5 3h3A1.5 1.5 0 0 1 15 4.5V6" /><path d="M18.5 6l-.9 13.1a2 2 0 0 1-2 1.9H8.4a2 2 0 0 1-2-1.9L5.5 6" /><path d="M10 10.5v6M14 10.5v6" /></Svg>
);
export const PencilIcon = (p: IconProps) => (
  <Svg {...p}><path d="M16.5 3.5a2.3 2.3 0 0 1 3.3 3.3L7.5 19.1 3 21l1.9-4.5z" /><path d="m14.5 5.5 3.3 3.3" /></Svg>
);
export const MoveIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3.5 7.5V18A1.5 1.5 0 0 0 5 19.5h14a1.5 1.5 0 0 0 1.5-1.5V9A1.5 1.5 0 0 0 19 7.5h-7L10 5H5a1.5 1.5 0 0 0-1.5 1.5" /><path d="M9 13.5h6.5M13 11l2.5 2.5L13 16" /></Svg>
);
export const CloseIcon = (p: IconProps) => (
  <Svg {...p}><path d="M18 6 6 18M6 6l12 12" /></Svg>
);
export const ChevronRightIcon = (p: IconProps) => (
  <Svg {...p}><path d="m9 18 6-6-6-6" /></Svg>
);
export const ChevronDownIcon = (p: IconProps) => (
  <Svg {...p}><path d="m6 9 6 6 6-6" /></Svg>
);
export const HomeIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3.5 10.5 12 3.5l8.5 7V19a1.5 1.5 0 0 1-1.5 1.5h-4.5V15h-5v5.5H5A1.5 1.5 0 0 1 3.5 19z" /></Svg>
);
export const ArrowUpIcon = (p: IconProps) => (
  <Svg {...p}><path d="M12 19V5M6 11l6-6 6 6" /></Svg>
);
export const ArrowDownIcon = (p: IconProps) => (
  <Svg {...p}><path d="M12 5v14M6 13l6 6 6-6" /></Svg>
);
export const SignOutIcon = (p: IconProps) => (
  <Svg {...p}><path d="M9.5 20.5h-4a2 2 0 0 1-2-2v-13a2 2 0 0 1 2-2h4" /><path d="m16 16.5 4.5-4.5L16 7.5M20.5 12H9.5" /></Svg>
);
export const InfoIcon = (p: IconProps) => (
  <Svg {...p}><circle cx="12" cy="12" r="9" /><path d="M12 16.5v-5M12 8h.01" /></Svg>
);
export const AlertIcon = (p: IconProps) => (
  <Svg {...p}><path d="M10.3 4 2 18.2A2 2 0 0 0 3.7 21h16.6a2 2 0 0 0 1.7-2.8L13.7 4a2 2 0 0 0-3.4 0z" /><path d="M12 9.5v4M12 17h.01" /></Svg>
);
export const CheckIcon = (p: IconProps) => (
  <Svg {...p}><path d="M20 6 9 17l-5-5" /></Svg>
);
export const EyeIcon = (p: IconProps) => (
  <Svg {...p}><path d="M2.5 12S6 5.5 12 5.5 21.5 12 21.5 12 18 18.5 12 18.5 2.5 12 2.5 12z" /><circle cx="12" cy="12" r="3" /></Svg>
);
export const KeyIcon = (p: IconProps) => (
  <Svg {...p}><circle cx="7.5" cy="15.5" r="4.5" /><path d="m10.7 12.3 9.8-9.8M16.5 6.5l3 3M14 9l2 2" /></Svg>
);
export const LinkOffIcon = (p: IconProps) => (
  <Svg {...p}><path d="M9.5 14.5 8 16a3.5 3.5 0 0 1-5-5l3-3a3.5 3.5 0 0 1 4.6-.3M14.5 9.5 16 8a3.5 3.5 0 0 1 5 5l-3 3a3.5 3.5 0 0 1-4.6.3" /><path d="M3 3l18 18" /></Svg>
);
export const PlusIcon = (p: IconProps) => (
  <Svg {...p}><path d="M12 5v14M5 12h14" /></Svg>
);
export const RefreshIcon = (p: IconProps) => (
  <Svg {...p}><path d="M20.5 12a8.5 8.5 0 1 1-2.6-6.1L20.5 8.5" /><path d="M20.5 3.5v5h-5" /></Svg>
);
export const CloudOffIcon = (p: IconProps) => (
  <Svg {...p}><path d="M3 3l18 18" /><path d="M8.5 6.3A6 6 0 0 1 17.7 10h.8a4 4 0 0 1 2.2 7.3M17 19H7a5 5 0 0 1-2.5-9.3" /></Svg>
);
export const SortIcon = (p: IconProps) => (
  <Svg {...p}><path d="M7 4v16M3.5 7.5 7 4l3.5 3.5M17 20V4M13.5 16.5 17 20l3.5-3.5" /></Svg>
);
export const WebhookIcon = (p: IconProps) => (
  <Svg {...p}><path d="M9 16.5a3.5 3.5 0 1 1-3-5.9M12.5 8.2a3.5 3.5 0 1 1 4.3 3.9M18 17h-7.5l-3-5L11 6" /></Svg>
);
export const ServerIcon = (p: IconProps) => (
  <Svg {...p}><rect x="3.5" y="4" width="17" height="6.5" rx="1.8" /><rect x="3.5" y="13.5" width="17" height="6.5" rx="1.8" /><path d="M7.5 7.25h.01M7.5 16.75h.01M11 7.25h6M11 16.75h6" /></Svg>
);
export const SendIcon = (p: IconProps) => (
  <Svg {...p}><path d="M21 3 10 14M21 3l-7 18-4-7-7-4z" /></Svg>
);
export const LogoIcon = (p: IconProps) => (
  <Svg {...p}><path d="M4 10h16v8.5a2.5 2.5 0 0 1-2.5 2.5h-11A2.5 2.5 0 0 1 4 18.5z" /><path d="M4 10l1.6-4.4A2.5 2.5 0 0 1 8 4h8a2.5 2.5 0 0 1 2.4 1.6L20 10" /><path d="M10 14h4" /></Svg>
);

/** The icon for a file type of the contract (`image`, `video`, …; anything else is `other`). */
export function TypeIcon(props: IconProps & { type: string }): JSX.Element {
  const p = { size: props.size, class: props.class };
  switch (props.type) {
    case 'image': return <ImageIcon {...p} />;
    case 'video': return <VideoIcon {...p} />;
    case 'document': return <DocumentIcon {...p} />;
    case 'audio': return <AudioIcon {...p} />;
    case 'archive': return <ArchiveIcon {...p} />;
    default: return <OtherIcon {...p} />;
  }
}
