/**
 * The tag rule, alone in a file with no imports so that the dashboard can bundle it (checking a tag
 * as it is typed) without TypeBox or the rest of the schemas.
 */
export const TAG_PATTERN = '^[a-z0-9_:-]{1,50}$';
export const MAX_TAGS = 20;
