import { EventsEditor } from '../components/editors/EventsEditor';
import { defineQueryType } from './definition';

export const eventsType = defineQueryType({
  id: 'events',
  label: 'Events',
  description: 'Annotations: restarts, down periods, changes of served model, engine or vLLM cache config',
  defaults: {},
  shared: { targets: true, models: false, groupBy: false, window: false },
  fields: {},
  editor: EventsEditor,
});
