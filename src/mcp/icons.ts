import type { Icon } from '@modelcontextprotocol/server';

/** Perennial's mark, the drawing of media/perennial.svg, in a given stroke colour. */
function mark(stroke: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="${stroke}" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"><path d="M12 21v-9"/><path d="M12 12c0-3.5 2.5-6 6.5-6.5C18 9.5 15.5 12 12 12z"/><path d="M12 15c0-3-2.2-5.2-5.8-5.6C6.6 12.8 8.8 15 12 15z"/><path d="M8 21h8"/></svg>`;
}

const dataUri = (svg: string) => `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;

/**
 * The icons of the server and its tools: inline (nothing for a client to fetch), one for light
 * and one for dark themes, since an image cannot take the theme's colour.
 */
export const ICONS: Icon[] = [
  { src: dataUri(mark('#1f6f43')), mimeType: 'image/svg+xml', sizes: ['any'], theme: 'light' },
  { src: dataUri(mark('#7ee2a8')), mimeType: 'image/svg+xml', sizes: ['any'], theme: 'dark' },
];
