/**
 * Files dragged in from the desktop: the page shows where they would go (the folder open, or
 * the folder under the pointer) and uploads them there on drop. Files dropped outside the
 * page's zone are never opened by the browser.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { hasFiles } from './views.js';

export function useDropZone(blocked: boolean, onDrop: (files: File[]) => void) {
  const [dragging, setDragging] = useState(false);
  const [dropKey, setDropKey] = useState<string | null>(null);
  const depth = useRef(0);

  const reset = () => {
    depth.current = 0;
    setDragging(false);
    setDropKey(null);
  };

  const handlers = {
    onDragEnter: (e: DragEvent) => {
      if (!hasFiles(e) || blocked) return;
      e.preventDefault();
      depth.current++;
      setDragging(true);
    },
    onDragOver: (e: DragEvent) => {
      if (!hasFiles(e) || blocked) return;
      e.preventDefault();
      e.dataTransfer!.dropEffect = 'copy';
      if (dropKey) setDropKey(null);
      if (!dragging) setDragging(true);
    },
    onDragLeave: () => {
      depth.current = Math.max(0, depth.current - 1);
      if (depth.current === 0) {
        setDragging(false);
        setDropKey(null);
      }
    },
    onDrop: (e: DragEvent) => {
      reset();
      if (!hasFiles(e) || blocked) return;
      e.preventDefault();
      onDrop(Array.from(e.dataTransfer!.files));
    },
  };

  useEffect(() => {
    const stop = (e: DragEvent) => { if (hasFiles(e)) e.preventDefault(); };
    window.addEventListener('dragover', stop);
    window.addEventListener('drop', stop);
    window.addEventListener('dragend', reset);
    return () => {
      window.removeEventListener('dragover', stop);
      window.removeEventListener('drop', stop);
      window.removeEventListener('dragend', reset);
    };
  }, []);

  return { dragging, dropKey, setDropKey, handlers, reset };
}
